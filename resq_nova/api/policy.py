#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
#    WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
#    License for the specific language governing permissions and limitations
#    under the License.
"""The policy enforcer of resq-api."""

from oslo_policy import policy

from resq_nova.api import policies

_ENFORCER = None


def init(conf):
    """(Re)build the enforcer from ``conf`` ([oslo_policy])."""
    global _ENFORCER
    _ENFORCER = policy.Enforcer(conf)
    _ENFORCER.register_defaults(policies.list_rules())
    _ENFORCER.load_rules()
    return _ENFORCER


def get_enforcer():
    """For oslopolicy-checker and the sample generator."""
    from oslo_config import cfg

    conf = cfg.ConfigOpts()
    conf([], project='resq')
    return init(conf)


def authorize(context, action, target):
    return _ENFORCER.authorize(action, target, context, do_raise=False)
