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
    """The enforcer of oslo.policy's tools (``--namespace resq-api``).

    oslopolicy-validator, -checker, -list-redundant and -policy-generator
    load it; the validator then opens ``cfg.CONF.oslo_policy.policy_file``
    itself, so the enforcer is on oslo.config's global ``CONF``, with
    resq-api's files: those the tool's ``--config-file`` named, else
    ``$RESQ_API_CONFIG``'s, else ``resq.conf`` and ``resq-api.conf`` of
    the default search, as resq-api reads them
    (:func:`resq_nova.conf.api.config_files`).
    """
    from oslo_config import cfg

    from resq_nova.conf import api as api_conf

    conf = cfg.CONF
    try:
        named = list(conf.config_file or ())
    except cfg.Error:
        named = []
    if not named:
        conf([], project='resq', prog=api_conf.PROG,
             default_config_files=api_conf.config_files())
    return init(conf)


def authorize(context, action, target):
    return _ENFORCER.authorize(action, target, context, do_raise=False)
