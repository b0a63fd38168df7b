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
"""Memory bandwidth, a cache domain's second dimension, in every planner.

A domain's ``mem_bw_mibps`` is what ResQ instances may hold there, an
instance's what it holds; no plan moves an instance to a domain whose
bandwidth it would over-commit, and a capacity that is absent is not
limited.
"""

import pickle

from resq_common import extra_specs
from resq_nova.optimizer import bound
from resq_nova.optimizer import collect
from resq_nova.optimizer import common
from resq_nova.optimizer import heuristic
from resq_nova.optimizer import ordering
from resq_nova.optimizer import planner
from resq_nova.optimizer import snapshot
from tests import base
from tests.unit.resq_nova.optimizer import base as obase
from tests.unit.resq_nova.optimizer import test_complete

BW = extra_specs.RC_MEM_BW


def two_hosts(cap=None, demand=600, kept_demand=0):
    """h1 holds one instance; h2 has room in ways and cores for it.

    h2's domain offers ``cap`` MiB/s (None: not limited) and already
    holds ``kept_demand`` of it through an instance that cannot move.
    """
    h2 = obase.host('h2', domains=((6, 9),))
    if cap is not None:
        h2['domains'][0]['mem_bw_mibps'] = cap
    return obase.snapshot(
        [obase.host('h1', domains=((6, 9),)), h2],
        [obase.inst('a', 'h1', ways=2, mem_bw_mibps=demand),
         obase.inst('b', 'h2', ways=2, migratable=False,
                    mem_bw_mibps=kept_demand)])


def end_use(snap, targets):
    """``{(host, domain): bandwidth held}`` after the plan."""
    use = {}
    for inst in snap.instances:
        key = targets.get(inst.uuid, (inst.host, inst.domain))
        use[key] = use.get(key, 0) + inst.mem_bw_mibps
    return use


def check_bandwidth(test, snap, targets):
    for (name, dom_id), used in end_use(snap, targets).items():
        cap = snap.host(name).domain(dom_id).mem_bw_mibps
        if cap is not None:
            test.assertLessEqual(used, cap, (name, dom_id))


class SnapshotTest(base.TestCase):

    def test_round_trip_keeps_bandwidth(self):
        snap = snapshot.from_dict(two_hosts(cap=1000, kept_demand=300))
        self.assertEqual(1000, snap.host('h2').domain(0).mem_bw_mibps)
        self.assertIsNone(snap.host('h1').domain(0).mem_bw_mibps)
        self.assertEqual(600, snap.instance('a').mem_bw_mibps)
        doc = snap.to_dict()
        self.assertEqual(1000, doc['hosts'][1]['domains'][0]['mem_bw_mibps'])
        self.assertNotIn('mem_bw_mibps', doc['hosts'][0]['domains'][0])
        self.assertEqual(600, doc['instances'][0]['mem_bw_mibps'])
        self.assertEqual(snap, snapshot.from_dict(doc))
        self.assertEqual(snap, pickle.loads(pickle.dumps(snap)))

    def test_without_bandwidth_the_document_is_as_before(self):
        doc = obase.snapshot([obase.host('h1')], [obase.inst('a', 'h1')])
        out = snapshot.from_dict(doc).to_dict()
        self.assertNotIn('mem_bw_mibps', out['hosts'][0]['domains'][0])
        self.assertNotIn('mem_bw_mibps', out['instances'][0])

    def test_the_fast_path_reads_what_the_reader_reads(self):
        doc = two_hosts(cap=1000, kept_demand=300)
        snap = snapshot.from_dict(doc)
        r = snapshot._Reader('x')
        self.assertEqual([snapshot._read_host(r, h, n, set())
                          for n, h in enumerate(doc['hosts'])], snap.hosts)
        self.assertEqual([snapshot._read_instance(r, i, n)
                          for n, i in enumerate(doc['instances'])],
                         snap.instances)

    def error(self, doc):
        return str(self.assertRaises(snapshot.SnapshotError,
                                     snapshot.from_dict, doc, 's'))

    def test_bad_values_are_refused_by_name(self):
        for where, value, msg in (
                ('domain', -1, 'hosts[1].domains[0].mem_bw_mibps: must be '
                               'at least 0, got -1'),
                ('domain', 1.5, 'hosts[1].domains[0].mem_bw_mibps: must be '
                                'an integer, got 1.5'),
                ('domain', True, 'hosts[1].domains[0].mem_bw_mibps: must '
                                 'be an integer, got True'),
                ('instance', -5, 'instances[0].mem_bw_mibps: must be at '
                                 'least 0, got -5'),
                ('instance', '600', "instances[0].mem_bw_mibps: must be an "
                                    "integer, got '600'")):
            doc = two_hosts(cap=1000)
            if where == 'domain':
                doc['hosts'][1]['domains'][0]['mem_bw_mibps'] = value
            else:
                doc['instances'][0]['mem_bw_mibps'] = value
            self.assertIn(msg, self.error(doc), (where, value))

    def test_an_over_committed_domain_is_refused(self):
        msg = self.error(two_hosts(cap=200, kept_demand=300))
        self.assertIn('cache domain 0 of h2 is already over-committed: its '
                      'instances hold 300 MiB/s of memory bandwidth of 200',
                      msg)

    def test_an_absent_capacity_is_not_limited(self):
        # (Instances may hold any bandwidth where none is recorded.)
        snap = snapshot.from_dict(two_hosts(cap=None, kept_demand=10 ** 6))
        snapshot.check_capacity(snap)
        self.assertEqual({}, snap.host('h2').domain(0).numa_caps())
        self.assertEqual({'mem_bw_mibps': 10 ** 6},
                         snap.instance('b').numa_need())


class PlansTest(base.TestCase):

    def plan(self, doc, **kwargs):
        snap = snapshot.from_dict(doc)
        return snap, planner.solve(snap, time_limit=10.0, **kwargs)

    def test_fits_the_ways_but_not_the_bandwidth_stays(self):
        # h2 has the cores and ways for a, and 500 of its 600 MiB/s.
        for full_model_max in (0, 1000):
            snap, got = self.plan(two_hosts(cap=800, kept_demand=300),
                                  full_model_max=full_model_max)
            self.assertEqual({}, got.targets, full_model_max)
            self.assertEqual(2, got.hosts_after)

    def test_with_the_bandwidth_it_moves(self):
        for full_model_max in (0, 1000):
            snap, got = self.plan(two_hosts(cap=900, kept_demand=300),
                                  full_model_max=full_model_max)
            self.assertEqual({'a': ('h2', 0)}, got.targets, full_model_max)

    def test_an_absent_capacity_does_not_limit(self):
        snap, got = self.plan(two_hosts(cap=None, kept_demand=10 ** 6))
        self.assertEqual({'a': ('h2', 0)}, got.targets)

    def test_the_heuristics_keep_it(self):
        snap = snapshot.from_dict(two_hosts(cap=800, kept_demand=300))
        fixed = common.fixed_instances(snap)
        self.assertEqual(({}, set()), heuristic.drain(snap, fixed))
        room = heuristic.prepare(snap)
        self.assertFalse(room.fits(snap.instance('a'), ('h2', 0)))
        # Out goes b's 300: then a fits.
        self.assertTrue(room.fits_without(snap.instance('a'), ('h2', 0),
                                          snap.instance('b')))

    def test_the_other_domain_of_the_host_takes_it(self):
        # Domain 0 of h2 lacks the bandwidth, domain 1 has it.
        doc = two_hosts(cap=800, kept_demand=300)
        doc['hosts'][1]['domains'].append(
            {'id': 1, 'cores': 6, 'ways': 9, 'reserved_ways': 2,
             'mem_bw_mibps': 600})
        for full_model_max in (0, 1000):
            snap, got = self.plan(doc, full_model_max=full_model_max)
            self.assertEqual({'a': ('h2', 1)}, got.targets, full_model_max)

    def test_mixed_clouds_never_over_commit_bandwidth(self):
        for seed in (1, 2, 3):
            snap = test_complete.mixed(seed, hosts=16, per_host=4)
            doc = snap.to_dict()
            for n, h in enumerate(doc['hosts']):
                for d in h['domains']:
                    d['mem_bw_mibps'] = 2000 + 500 * (n % 3)
            # Each domain holds at most 2000 now; demands of 300-900.
            held = {}
            for n, i in enumerate(doc['instances']):
                key = (i['host'], i['domain'])
                want = 300 + 200 * (n % 4)
                if held.get(key, 0) + want > 2000:
                    want = 0
                held[key] = held.get(key, 0) + want
                i['mem_bw_mibps'] = want
            snap = snapshot.from_dict(doc)
            fixed = common.fixed_instances(snap)
            for full_model_max in (0, 1000):
                got = planner.solve(snap, time_limit=8.0,
                                    full_model_max=full_model_max)
                check_bandwidth(self, snap, got.targets)
                drained = snap.hosts_in_use() - {
                    got.targets.get(i.uuid, (i.host,))[0]
                    for i in snap.instances} - {
                    h.name for h in snap.hosts if h.other_load}
                test_complete.check(self, snap, fixed, got.targets,
                                    drained)


class BoundTest(base.TestCase):

    def test_a_domain_holds_what_its_bandwidth_allows(self):
        snap = snapshot.from_dict(two_hosts(cap=1000))
        kshape = bound._inst_shape(snap.instance('a'))
        # 6 cores, 9 ways: 4 of 2 ways; 1000 MiB/s: one of 600.
        self.assertEqual(1, bound._per_domain(
            kshape, (6, 9, None, None, None, 1000)))
        self.assertEqual(4, bound._per_domain(
            kshape, (6, 9, None, None, None, None)))
        self.assertEqual(
            [(1,)], bound.patterns([(1, 2, 1, (('mem_bw_mibps', 600),))],
                                   (6, 9, None, None, None, 1000)))

    def test_the_hosts_bound_counts_bandwidth(self):
        # Three instances of 600 MiB/s on three hosts of 1000 each: the
        # ways would take them on one, the bandwidth keeps three.
        doc = obase.snapshot(
            [obase.host('h%d' % n, domains=((6, 9),)) for n in range(3)],
            [obase.inst('i%d' % n, 'h%d' % n, mem_bw_mibps=600)
             for n in range(3)])
        for h in doc['hosts']:
            h['domains'][0]['mem_bw_mibps'] = 1000
        snap = snapshot.from_dict(doc)
        fixed = common.fixed_instances(snap)
        self.assertEqual(3, bound.hosts_lower_bound(snap, fixed)[0])
        self.assertEqual(3, planner.solve(snap, time_limit=5.0).hosts_after)
        for h in doc['hosts']:
            del h['domains'][0]['mem_bw_mibps']
        snap = snapshot.from_dict(doc)
        self.assertEqual(1, bound.hosts_lower_bound(snap, fixed)[0])


class OrderingTest(base.TestCase):

    def test_a_move_waits_for_the_bandwidth(self):
        snap = snapshot.from_dict(two_hosts(cap=800, kept_demand=300))
        ledger = ordering.Ledger(snap)
        self.assertEqual('domain 0 of h2 has 500 MiB/s of memory bandwidth '
                         'free, it needs 600',
                         ledger.blocker(snap.instance('a'), 'h2', 0))
        snap = snapshot.from_dict(two_hosts(cap=900, kept_demand=300))
        self.assertIsNone(ordering.Ledger(snap).blocker(
            snap.instance('a'), 'h2', 0))


class FakePlacement:
    def __init__(self, allocs):
        self.allocs = allocs

    def get_allocations(self, uuid):
        return self.allocs[uuid]


def server(uuid, slo=extra_specs.RESERVED):
    return {'id': uuid, 'status': 'ACTIVE', 'name': uuid,
            'flavor': {'vcpus': 1, 'ram': 1024,
                       'extra_specs': {'resq:slo': slo}}}


class CollectTest(base.TestCase):

    def tally(self, allocs):
        tally = collect._Tally('root', {'rp0': 0})
        placement = FakePlacement(allocs)
        for uuid in sorted(allocs):
            tally.count(placement, {'host': 'h1'}, 'h1', server(uuid),
                        False)
        return tally

    def test_bandwidth_is_read_from_placement(self):
        tally = self.tally({
            'a': {'rp0': {extra_specs.RC_LLC_WAY: 2,
                          extra_specs.RC_LLC_CLOS: 1, BW: 600},
                  'root': {'PCPU': 1}},
            'b': {'rp0': {extra_specs.RC_LLC_WAY: 3,
                          extra_specs.RC_LLC_CLOS: 1},
                  'root': {'PCPU': 1}}})
        self.assertEqual([600, 0],
                         [i.mem_bw_mibps for i in tally.instances])
        inv = {extra_specs.RC_LLC_WAY: {'total': 11, 'reserved': 2},
               extra_specs.RC_LLC_CLOS: {'total': 4, 'reserved': 1},
               BW: {'total': 10000, 'reserved': 1000}}
        # 400 MiB/s are held by a consumer the snapshot does not list
        # (a migration in progress, say).
        usage = {extra_specs.RC_LLC_WAY: 5, extra_specs.RC_LLC_CLOS: 2,
                 BW: 1000}
        dom = collect._domain((0, 'rp0', inv, ['CUSTOM_RESQ_CORES_6'],
                               usage), tally, 0, 6)
        self.assertEqual(10000 - 1000 - 400, dom.mem_bw_mibps)

    def test_without_an_inventory_there_is_no_limit(self):
        tally = self.tally({})
        inv = {extra_specs.RC_LLC_WAY: {'total': 11, 'reserved': 2},
               extra_specs.RC_LLC_CLOS: {'total': 4, 'reserved': 1}}
        dom = collect._domain((0, 'rp0', inv, [], {}), tally, 0, 6)
        self.assertIsNone(dom.mem_bw_mibps)

    def test_where_bandwidth_is_held_a_domain_without_it_offers_none(self):
        hosts = [snapshot.Host('h1', 3, [snapshot.Domain(0, 6, 9)]),
                 snapshot.Host('h2', 3, [snapshot.Domain(0, 6, 9, 2, None,
                                                         None, None, None,
                                                         900)])]
        plain = [snapshot.Instance('b', 'h1', 0, 1, 2)]
        collect._no_bandwidth_offered(hosts, plain)
        self.assertIsNone(hosts[0].domains[0].mem_bw_mibps)
        held = plain + [snapshot.Instance('a', 'h2', 0, 1, 2,
                                          mem_bw_mibps=600)]
        collect._no_bandwidth_offered(hosts, held)
        self.assertEqual([0, 900], [h.domains[0].mem_bw_mibps
                                    for h in hosts])
