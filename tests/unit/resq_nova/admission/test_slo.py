import os

from resq_common import profile as profile_mod
from resq_nova.admission import slo
from resq_profiler import store as store_mod
from tests import base
from tests.unit.resq_profiler import test_profile


class LoadTermsTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.store = store_mod.ProfileStore(os.path.join(self.tmp, 'p'))
        self.prof = profile_mod.Profile.from_dict(test_profile.make_doc())
        self.store.put(self.prof)

    def term(self, **kw):
        doc = {'name': 'a', 'profile': self.prof.profile_id,
               'throughput_mpps': 2.0, 'latency_p95_us': 20}
        doc.update(kw)
        return doc

    def test_valid(self):
        path = self.write_json('s.json', {'terms': [
            self.term(), self.term(name='b', max_instances=3)]})
        terms = slo.load_terms(path, self.store)
        self.assertEqual(['a', 'b'], [t.name for t in terms])
        self.assertEqual(self.prof, terms[0].profile)
        self.assertEqual(3, terms[1].max_instances)

    def test_errors_name_file_and_field(self):
        cases = [
            ('{', 'is not valid JSON'),
            ({'terms': []}, 'holds no terms'),
            ({'terms': [self.term(throughput_mpps=-1)]},
             'term 1 (a): field throughput_mpps is -1; give a positive '
             'number of Mpps'),
            ({'terms': [self.term(latency_p95_us=True)]},
             'term 1 (a): field latency_p95_us is True'),
            ({'terms': [self.term(), self.term()]},
             "term 2: name 'a' is also term 1's"),
            ({'terms': [self.term(profile='nope')]},
             "term 1 (a): field profile: No profile 'nope'"),
            ({'terms': [{'name': 'x'}]},
             'term 1 (x): field profile is missing'),
        ]
        for doc, text in cases:
            path = self.write_json('bad.json', doc)
            exc = self.assertRaises(slo.InvalidSLOFile, slo.load_terms,
                                    path, self.store)
            self.assertIn(path, str(exc))
            self.assertIn(text, str(exc))
        exc = self.assertRaises(slo.InvalidSLOFile, slo.load_terms,
                                os.path.join(self.tmp, 'missing.json'),
                                self.store)
        self.assertIn('cannot be read', str(exc))
