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
"""resq-agent's Prometheus metrics (see :mod:`resq_common.metrics`).

Computed at each scrape from what the agent enforces and measures, the
same figures as ``resq-agent status``: per cache domain the ways and
classes of service in all, used and leased; per instance its ways, LLC
occupancy and memory bandwidth (CMT/MBM) with its SLO term as labels, and
where the host has MBA its group's MB value and the bandwidth it allows;
per on-demand NF its latency against its target and its violations;
failed enforcement writes, dropped events and each remote dependency.
"""

import collections

from resq_common import mba
from resq_common import metrics


def _term_labels(term):
    return [term.get('slo', ''), term.get('profile', '')]


class AgentCollector:
    """A ``prometheus_client`` collector over an :class:`AgentManager`."""

    INSTANCE_LABELS = ['server_uuid', 'domain', 'slo', 'profile']

    def __init__(self, manager):
        self.manager = manager

    def describe(self):
        # Metrics are known only at a scrape: no describe-time collect.
        return []

    def collect(self):
        status = self.manager.status()
        terms = self.manager.terms()
        yield from self._domains(status)
        yield from self._instances(status, terms)
        yield from self._ondemand(terms)
        yield from self._agent(status)
        yield from metrics.dependency_families()

    def _domains(self, status):
        m = self.manager
        ways = metrics.gauge('resq_cache_ways', 'Ways of the cache domain '
                             'that CAT controls.', ['domain'])
        offered = metrics.gauge('resq_cache_instance_ways', 'Ways of the '
                                'domain reserved instances may get '
                                '(Placement\'s CUSTOM_LLC_WAY less its '
                                'reserved part).', ['domain'])
        used = metrics.gauge('resq_cache_ways_used', 'Ways of the domain '
                             'held by partitioned instances.', ['domain'])
        leased = metrics.gauge('resq_cache_ways_leased', 'Ways of the '
                               'domain leased to on-demand NFs.', ['domain'])
        clos = metrics.gauge('resq_clos', 'Classes of service partitions '
                             'of the domain may use (one class serves an '
                             'instance in each domain).', ['domain'])
        clos_used = metrics.gauge('resq_clos_used', 'Classes of service '
                                  'held by the domain\'s instances.',
                                  ['domain'])
        holding = collections.Counter()
        count = collections.Counter()
        for inst in status['instances']:
            holding[inst['domain_id']] += inst['ways']
            count[inst['domain_id']] += 1
        # One class stays with the default group.
        usable = max(m.num_closids - 1, 0)
        for shape in m.shapes:
            label = [str(shape.id)]
            ways.add_metric(label, shape.ways)
            offered.add_metric(label, shape.capacity)
            used.add_metric(label, holding[shape.id])
            leased.add_metric(label, shape.lease_ways)
            clos.add_metric(label, usable)
            clos_used.add_metric(label, count[shape.id])
        return [ways, offered, used, leased, clos, clos_used]

    def _instances(self, status, terms):
        labels = self.INSTANCE_LABELS
        ways = metrics.gauge('resq_instance_llc_ways', 'Ways of the '
                             'instance\'s partition.', labels)
        occupancy = metrics.gauge('resq_instance_llc_occupancy_bytes',
                                  'LLC occupancy of the instance (CMT).',
                                  labels)
        bandwidth = metrics.gauge(
            'resq_instance_memory_bandwidth_bytes_per_second', 'Memory '
            'bandwidth of the instance (MBM), all or local to its NUMA '
            'node.', labels + ['scope'])
        mb_value = metrics.gauge(
            'resq_instance_mb_schemata_value', 'The MB value of the '
            'instance\'s resctrl group in its domain, as its schemata '
            'shows it (mode mbps: MiB/s; percent: of each core\'s peak '
            'rate; amd: 1/8 GB/s); the most is no limit.',
            labels + ['mode'])
        mb_limit = metrics.gauge(
            'resq_instance_memory_bandwidth_limit_bytes_per_second',
            'Memory bandwidth the instance\'s MB value allows (its '
            'CUSTOM_MEM_BW_MIBPS rounded up to the kernel\'s steps; in '
            'percent mode the share of the domain\'s memory_bandwidth_mibps '
            'it stands for, enforced per core).', labels)
        target = metrics.gauge(
            'resq_instance_throughput_target_packets_per_second',
            'Throughput the instance\'s SLO term promises.', labels)
        info = self.manager.topology.mba_info
        domain_mibps = self.manager.conf.resq_agent.memory_bandwidth_mibps
        for inst in status['instances']:
            term = terms.get(inst['uuid'], {})
            label = [inst['uuid'], str(inst['domain_id'])] + _term_labels(
                term)
            ways.add_metric(label, inst['ways'])
            if inst.get('llc_occupancy_bytes') is not None:
                occupancy.add_metric(label, inst['llc_occupancy_bytes'])
            for scope in ('total', 'local'):
                value = inst.get('mbm_%s_bytes_per_s' % scope)
                if value is not None:
                    bandwidth.add_metric(label + [scope], value)
            if inst.get('mb') is not None and info is not None:
                mb_value.add_metric(label + [info.mode], inst['mb'])
                granted = mba.granted_mibps(inst['mb'], info, domain_mibps)
                if inst.get('mem_bw_mibps') and granted is not None:
                    mb_limit.add_metric(label, granted * 2 ** 20)
            mpps = _number(term.get('throughput_mpps'))
            if mpps is not None:
                target.add_metric(label, mpps * 1e6)
        return [ways, occupancy, bandwidth, mb_value, mb_limit, target]

    def _ondemand(self, terms):
        od = self.manager.ondemand
        labels = ['server_uuid', 'profile']
        latency = metrics.gauge('resq_ondemand_latency_seconds', 'Latency '
                                'of the on-demand NF, last read.', labels)
        target = metrics.gauge('resq_ondemand_latency_target_seconds',
                               'Latency the on-demand NF\'s term promises.',
                               labels)
        violations = metrics.counter('resq_ondemand_violations', 'Passes '
                                     'that found the NF over its latency '
                                     'target.', labels)
        if od is not None:
            for uuid, (got, want) in sorted(od.latency_of.items()):
                label = [uuid, terms.get(uuid, {}).get('profile', '')]
                if got is not None:
                    latency.add_metric(label, got / 1e6)
                target.add_metric(label, want / 1e6)
                violations.add_metric(label, od.violations.get(uuid, 0))
        return [latency, target, violations]

    def _agent(self, status):
        refused = metrics.gauge('resq_instances_refused', 'Instances the '
                                'agent could not partition (status '
                                'says why).')
        refused.add_metric([], len(status['refused']))
        errors = metrics.counter('resq_enforcement_errors', 'resctrl or '
                                 'libpqos writes that failed.')
        errors.add_metric([], self.manager.enforcement_errors)
        dropped = metrics.counter('resq_events_dropped', 'Instance events '
                                  'dropped because the queue was full.')
        dropped.add_metric([], status['events_dropped'])
        return [refused, errors, dropped]


def _number(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return None
