import gc
import json
import os
import pickle

import fixtures

from resq_nova.optimizer import snapshot
from tests import base
from tests.unit.resq_nova.optimizer import base as obase


class SnapshotTest(base.TestCase):

    def doc(self):
        return obase.snapshot(
            [obase.host('h1'), obase.host('h2', domains=((4, 9), (2, 9)))],
            [obase.inst('a', 'h1'), obase.inst('b', 'h2', domain=1)],
            [{'policy': 'anti-affinity', 'members': ['a', 'b']}])

    def error(self, doc):
        return str(self.assertRaises(snapshot.SnapshotError,
                                     snapshot.from_dict, doc, 'snap.json'))

    def test_round_trip(self):
        snap = snapshot.from_dict(self.doc())
        again = snapshot.from_dict(json.loads(json.dumps(snap.to_dict())))
        self.assertEqual(snap.to_dict(), again.to_dict())
        self.assertEqual({'h1', 'h2'}, snap.hosts_in_use())
        self.assertEqual(2, snap.host('h2').domain(1).cores)

    def test_not_json_and_unreadable(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path, 's')
        with open(path, 'w') as f:
            f.write('{"hosts": [')
        exc = self.assertRaises(snapshot.SnapshotError, snapshot.load, path)
        self.assertIn('%s: is not JSON' % path, str(exc))
        exc = self.assertRaises(snapshot.SnapshotError, snapshot.load,
                                path + '.missing')
        self.assertIn('cannot be read', str(exc))
        exc = self.assertRaises(snapshot.SnapshotError, snapshot.loads,
                                '[' * 100000)
        self.assertIn('snapshot', str(exc))

    def test_missing_keys_name_the_place(self):
        doc = self.doc()
        del doc['server_groups']
        self.assertIn("lacks 'server_groups'", self.error(doc))
        doc = self.doc()
        del doc['hosts'][1]['domains'][0]['ways']
        self.assertIn("hosts[1].domains[0]: lacks 'ways'", self.error(doc))
        doc = self.doc()
        doc['instances'][0]['ways'] = 'four'
        self.assertIn("instances[0].ways: must be an integer, got 'four'",
                      self.error(doc))

    def test_unknown_host_or_domain(self):
        doc = self.doc()
        doc['instances'][1]['host'] = 'h9'
        msg = self.error(doc)
        self.assertIn("instance b is on host 'h9', which the snapshot does "
                      "not list", msg)
        doc = self.doc()
        doc['instances'][0]['domain'] = 3
        self.assertIn('cache domain 3 of h1, which has domains [0]',
                      self.error(doc))

    def test_over_committed(self):
        doc = self.doc()
        doc['instances'].append(obase.inst('c', 'h1', ways=8))
        self.assertIn('cache domain 0 of h1 is already over-committed: its '
                      'instances use 10 ways of 9', self.error(doc))
        doc = self.doc()
        doc['hosts'][0]['clos'] = 0
        self.assertIn('host h1 is already over-committed', self.error(doc))
        doc = self.doc()
        doc['instances'][1].update(host='h1', domain=0)
        self.assertIn('anti-affinity group', self.error(doc))

    def test_unknown_policy_and_duplicates(self):
        doc = self.doc()
        doc['server_groups'][0]['policy'] = 'together'
        self.assertIn("unknown policy 'together'", self.error(doc))
        doc = self.doc()
        doc['instances'].append(dict(doc['instances'][0]))
        self.assertIn('instance a is listed twice', self.error(doc))

    def test_the_fast_path_reads_what_the_reader_reads(self):
        # (Hosts and instances of the usual types skip the field-by-field
        # reader; the snapshot is the same either way.)
        doc = self.doc()
        doc['hosts'][0].update(az='az1', cell='c1', uuid='u1', down=True,
                               other_load=2, resources={'MEMORY_MB': 8192})
        doc['hosts'][1]['domains'][0].update(provider='p', clos=4,
                                             memory_mb=4096,
                                             hugepages_mb=2048)
        doc['instances'][0].update(az='az1', reason='pinned', name='vm-a',
                                   memory_mb=1024, hugepages=True,
                                   resources={'MEMORY_MB': 1024})
        doc['instances'][1].update(migratable=False, memory_mb=512)
        snap = snapshot.from_dict(doc)
        r = snapshot._Reader('x')
        hosts = [snapshot._read_host(r, h, n, set())
                 for n, h in enumerate(doc['hosts'])]
        insts = [snapshot._read_instance(r, i, n)
                 for n, i in enumerate(doc['instances'])]
        self.assertEqual(hosts, snap.hosts)
        self.assertEqual(insts, snap.instances)
        # Copies: the snapshot holds none of the document's dicts.
        self.assertIsNot(doc['instances'][0]['resources'],
                         snap.instances[0].resources)
        self.assertIsNot(doc['hosts'][0]['resources'],
                         snap.hosts[0].resources)

    def test_what_the_fast_path_refuses_the_reader_names(self):
        for where, field, value, msg in (
                ('instances', 'cores', True,
                 'instances[0].cores: must be an integer, got True'),
                ('instances', 'ways', 0,
                 'instances[0].ways: must be at least 1, got 0'),
                ('instances', 'az', '',
                 'instances[0].az: must be a non-empty string'),
                ('instances', 'resources', {'memory': 1},
                 "'memory' is not a resource class name"),
                ('instances', 'resources', {'MEMORY_MB': -1},
                 'instances[0].resources.MEMORY_MB: must be at least 0'),
                ('instances', 'hugepages', 1,
                 'instances[0].hugepages: must be true or false'),
                ('hosts', 'clos', 2.5,
                 'hosts[0].clos: must be an integer, got 2.5'),
                ('hosts', 'disabled', 'no',
                 "hosts[0].disabled: must be true or false, got 'no'"),
                ('hosts', 'cell', 7,
                 'hosts[0].cell: must be a non-empty string, got 7')):
            doc = self.doc()
            doc[where][0][field] = value
            self.assertIn(msg, self.error(doc), (where, field))
        doc = self.doc()
        doc['hosts'][1]['domains'].append(dict(doc['hosts'][1]['domains'][0]))
        self.assertIn('hosts[1].domains[2]: host h2 lists domain 0 twice',
                      self.error(doc))
        doc = self.doc()
        doc['hosts'].append(dict(doc['hosts'][0]))
        self.assertIn('hosts[2]: host h1 is listed twice', self.error(doc))
        doc = self.doc()
        doc['instances'][0] = ['a']
        self.assertIn('instances[0]: must be an object, got list',
                      self.error(doc))

    def test_the_collector_is_back_on_after_reading(self):
        self.assertTrue(gc.isenabled())
        snapshot.from_dict(self.doc())
        self.assertTrue(gc.isenabled())
        doc = self.doc()
        doc['instances'][0]['host'] = 'h9'
        self.error(doc)
        self.assertTrue(gc.isenabled())
        gc.disable()
        try:
            snapshot.from_dict(self.doc())
            self.assertFalse(gc.isenabled())
        finally:
            gc.enable()

    def test_cells_split_in_one_pass_as_before(self):
        doc = obase.snapshot(
            [obase.host('h1', cell='c2'), obase.host('h2', cell='c1'),
             obase.host('h3', cell='c2'), obase.host('h4')],
            [obase.inst('a', 'h1'), obase.inst('b', 'h2'),
             obase.inst('c', 'h3'), obase.inst('d', 'h4')],
            [{'policy': 'anti-affinity', 'members': ['a', 'b', 'c', 'x'],
              'id': 'g'},
             {'policy': 'affinity', 'members': ['d']}])
        got = snapshot.cells(snapshot.from_dict(doc, 's'))
        self.assertEqual([None, 'c1', 'c2'], [c for c, _ in got])
        self.assertEqual([['h4'], ['h2'], ['h1', 'h3']],
                         [[h.name for h in sub.hosts] for _, sub in got])
        self.assertEqual([['d'], ['b'], ['a', 'c']],
                         [[i.uuid for i in sub.instances] for _, sub in got])
        self.assertEqual(
            [[('affinity', ['d'], None)], [('anti-affinity', ['b'], 'g')],
             [('anti-affinity', ['a', 'c'], 'g')]],
            [[(g.policy, g.members, g.id) for g in sub.server_groups]
             for _, sub in got])
        self.assertEqual('s (cell c2)', got[2][1].source)

    def test_pickled_by_columns_it_comes_back_the_same(self):
        doc = self.doc()
        doc['taken_at'] = '2026-11-29T10:00:00Z'
        doc['hosts'][0].update(az='az1', cell='c1', uuid='u1', down=True,
                               other_load=2, resources={'MEMORY_MB': 8192})
        doc['hosts'][1]['domains'][0].update(provider='p', clos=4,
                                             memory_mb=4096,
                                             hugepages_mb=2048)
        doc['instances'][0].update(az='az1', reason='pinned', name='vm-a',
                                   memory_mb=1024, hugepages=True,
                                   resources={'MEMORY_MB': 1024,
                                              'DISK_GB': 10})
        doc['server_groups'][0]['id'] = 'g1'
        snap = snapshot.from_dict(doc, 'snap.json')
        again = pickle.loads(pickle.dumps(snap))
        self.assertEqual(snap, again)
        self.assertEqual(('snap.json', '2026-11-29T10:00:00Z'),
                         (again.source, again.taken_at))
        self.assertIs(again.host('h2'), again.hosts[1])
        # (Each its own resources, as read.)
        self.assertIsNot(again.hosts[1].resources,
                         again.instances[1].resources)
