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
"""Ask each of the agent's remote dependencies once, all at the same time.

``resq-agent status`` reads libvirt and Placement through its reconcile;
OVSDB and resq-api it would not ask at all. Each probe here is one small
bounded request (the dependency's own deadline) on a thread of its own,
so the status costs the longest deadline once, not their sum, and says
of every configured dependency whether it answers
(:func:`resq_common.deadline.health`).
"""

import threading

from oslo_log import log as logging

from resq_agent import ovs
from resq_common.clients import placement as placement_client
from resq_common.clients import resq as resq_client
from resq_common.conf import clients

LOG = logging.getLogger(__name__)


def _placement(conf):
    try:
        adapter = clients.load_adapter(conf, clients.PLACEMENT, 'placement')
    except clients.MissingCredentials:
        return None
    return lambda: clients.call(adapter, '/', 'GET',
                                placement_client.PlacementUnavailable)


def _resq_api(conf):
    api = conf[resq_client.GROUP]
    if not (api.auth_type or api.endpoint_override):
        return None
    adapter = clients.load_adapter(conf, resq_client.GROUP,
                                   resq_client.SERVICE_TYPE)
    return lambda: clients.call(adapter, '/', 'GET',
                                resq_client.ResQAPIUnavailable)


def _ovsdb(conf):
    opts = conf.resq_agent
    if not (opts.dma_sizing or opts.nfvnice):
        return None          # nothing of the agent would use it
    ports = ovs.OvsPorts.from_conf(conf)
    if ports is None:
        return None

    def ping():
        try:
            ports.ping()
        finally:
            ports.close()
    return ping


PROBES = (('placement', _placement), ('resq-api', _resq_api),
          ('ovsdb', _ovsdb))


def start(conf):
    """Start a probe of every configured dependency; the threads.

    Each outcome lands in :mod:`resq_common.deadline`'s registry; join the
    threads before reading it.
    """
    threads = []
    for name, make in PROBES:
        try:
            probe = make(conf)
        except Exception as exc:
            LOG.warning('Cannot set up a check of %s: %s', name, exc)
            continue
        if probe is None:
            continue
        thread = threading.Thread(target=_quietly, args=(name, probe),
                                  name='resq-probe-%s' % name, daemon=True)
        thread.start()
        threads.append(thread)
    return threads


def _quietly(name, probe):
    try:
        probe()
    except Exception as exc:
        LOG.warning('%s does not answer: %s', name, exc)
