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
"""The ``metrics_listen`` option resq-agent and resq-optimizer share."""

from oslo_config import cfg


def listen_opt(default_port):
    """``metrics_listen``: where to serve Prometheus metrics (off)."""
    return cfg.StrOpt(
        'metrics_listen', default='',
        help='Address and port to serve Prometheus metrics on, as '
             'HOST:PORT (for example 127.0.0.1:%d, or [::]:%d for every '
             'address); empty (the default) serves none. GET /metrics '
             'answers in the Prometheus text format; see the admin '
             'guide\'s monitoring page for the metrics.'
             % (default_port, default_port))
