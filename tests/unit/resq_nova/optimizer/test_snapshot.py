import json
import os

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
