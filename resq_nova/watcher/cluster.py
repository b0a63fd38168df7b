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
"""Watcher's compute model read as the Nova API ``collect`` expects.

:func:`resq_nova.optimizer.collect.collect` builds a snapshot from
Placement and a Nova client; :class:`ModelCompute` answers that client's
questions from the audit's (scoped) Watcher compute model instead:

* compute services and hypervisors: the model's compute nodes (a node's
  ``hostname`` is its service host, its ``uuid`` the compute node and so
  its Placement root provider, whose name is the hypervisor hostname);
* servers: the model's instances, with their flavor's vCPUs, RAM and
  extra specs, their state and metadata, on the node the model maps them
  to;
* what the model does not hold (availability zones of the services,
  server groups, host aggregates naming cells): Nova, through ``nova``.

Instances the audit scope excludes (``watcher_exclude``) stay where they
are: :func:`snapshot_from` marks them unmovable, with the reason.
"""

from resq_nova.optimizer import collect

EXCLUDED = ('the audit scope excludes it (watcher_exclude), so it stays '
            'where it is')


class ModelCompute:
    """The compute client interface of ``collect`` over Watcher's model.

    :param model: a Watcher ``ModelRoot`` (compute model).
    :param placement: the Placement client (names the hypervisors).
    :param nova: a :class:`resq_common.clients.compute.ComputeClient`
        for zones, server groups and aggregates; ``None`` reads none of
        them (a cloud without server groups or cells, tests).
    """

    def __init__(self, model, placement, nova=None):
        self.model = model
        self.placement = placement
        self.nova = nova
        self._names = None

    def node_names(self):
        """``{node uuid: hypervisor hostname}`` of nodes in Placement.

        Nodes without a Placement provider have no cache domain and are
        left out (``collect`` would skip them anyway).
        """
        if self._names is None:
            self._names = {}
            for node in self.model.get_all_compute_nodes().values():
                rp = self.placement.get_provider(node.uuid)
                if rp is not None:
                    self._names[node.uuid] = rp['name']
        return self._names

    def list_compute_services(self):
        zones = {}
        if self.nova is not None:
            zones = {s['host']: s.get('zone')
                     for s in self.nova.list_compute_services()}
        services = []
        for node in self.model.get_all_compute_nodes().values():
            services.append({
                'host': node.hostname,
                'zone': zones.get(node.hostname),
                'status': 'disabled' if node.status == 'disabled'
                else 'enabled',
                'state': 'down' if node.state == 'down' else 'up'})
        return services

    def list_hypervisors(self):
        names = self.node_names()
        return [{'hypervisor_hostname': names[node.uuid],
                 'service': {'host': node.hostname}}
                for node in self.model.get_all_compute_nodes().values()
                if node.uuid in names]

    def list_all_servers(self):
        names = self.node_names()
        servers = []
        for node in self.model.get_all_compute_nodes().values():
            for inst in self.model.get_node_instances(node):
                servers.append(_server(inst, node, names.get(node.uuid)))
        return servers

    def list_server_groups(self):
        return self.nova.list_server_groups() if self.nova else []

    def list_aggregates(self):
        return self.nova.list_aggregates() if self.nova else []


def _server(inst, node, hypervisor):
    """One instance of the model as Nova's server detail."""
    return {
        'id': inst.uuid,
        'name': inst.name,
        'status': str(inst.state).upper(),
        'OS-EXT-STS:task_state': None,
        'OS-EXT-SRV-ATTR:host': node.hostname,
        'OS-EXT-SRV-ATTR:hypervisor_hostname': hypervisor,
        'pinned_availability_zone': inst.pinned_az or None,
        'metadata': dict(inst.metadata or {}),
        'flavor': {'vcpus': inst.vcpus, 'ram': inst.memory,
                   'extra_specs': dict(inst.flavor_extra_specs or {})},
    }


def snapshot_from(model, placement, nova=None, cell_key=collect.CELL_KEY):
    """The optimizer's snapshot of the hosts and instances of ``model``.

    :raises resq_nova.optimizer.snapshot.SnapshotError: as ``collect``.
    """
    compute = ModelCompute(model, placement, nova)
    snap = collect.collect(placement, compute,
                           cell_key=cell_key if nova is not None else None)
    snap.source = 'the Watcher compute model'
    excluded = {i.uuid for i in model.get_all_instances().values()
                if i.watcher_exclude}
    for inst in snap.instances:
        if inst.uuid in excluded and inst.migratable:
            inst.migratable = False
            inst.reason = EXCLUDED
    return snap
