import copy

from resq_common import profile as profile_mod
from resq_profiler import exception
from tests import base


def make_doc(**changes):
    doc = {
        'schema_version': 1,
        'id': 'lpm-64B-100000flows-abcdef12',
        'nf': {'name': 'LPM',
               'config_digest': profile_mod.config_digest('rules')},
        'traffic': {'packet_bytes': 64, 'flows': 100000},
        'platform': {'llc_ways': 20, 'way_size_bytes': 2359296,
                     'cpu_model': 'Xeon'},
        'throughput': {'unit': 'Mpps',
                       'points': [[1, 3.0], [2, 4.0], [4, 5.0], [20, 5.5]]},
        'latency': {'unit': 'us', 'percentile': 95, 'ways': 20,
                    'points': [[0.1, 10.0], [0.5, 12.0], [1.0, 20.0]]},
        'measurement': {'driver': 'model',
                        'points': {'throughput': 4, 'latency': 3},
                        'max_interpolation_error_pct': 0.5},
    }
    for path, value in changes.items():
        node = doc
        keys = path.split('.')
        for key in keys[:-1]:
            node = node[key]
        if value is KeyError:
            del node[keys[-1]]
        else:
            node[keys[-1]] = value
    return doc


class ProfileQueriesTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.prof = profile_mod.Profile.from_dict(make_doc())

    def test_round_trip(self):
        again = profile_mod.Profile.from_json(self.prof.to_json())
        self.assertEqual(self.prof, again)

    def test_throughput_queries(self):
        self.assertEqual(4.5, self.prof.throughput_at(3))
        self.assertEqual(5.5, self.prof.peak_mpps)
        self.assertEqual(3, self.prof.min_ways_for(4.5))
        self.assertEqual(4, self.prof.min_ways_for(4.5, load_cap=0.95))
        self.assertIsNone(self.prof.min_ways_for(6.0))
        self.assertEqual(1, self.prof.min_ways_for(0.1))

    def test_latency_queries(self):
        self.assertEqual(16.0, self.prof.latency_at(0.75))
        self.assertAlmostEqual(0.75, self.prof.max_load_for_latency(16.0))
        self.assertEqual(1.0, self.prof.max_load_for_latency(25.0))
        self.assertEqual(10.0, self.prof.latency_floor_us)
        exc = self.assertRaises(exception.TargetUnreachable,
                                self.prof.max_load_for_latency, 9.0)
        self.assertIn('below the floor', str(exc))

    def test_concave_fit_matches_concave_data(self):
        pieces, over = self.prof.concave_fit()
        self.assertEqual(0.0, over)
        self.assertEqual([1, 2, 4], [p.pivot for p in pieces])
        self.assertEqual([1.0, 0.5, 0.03125], [p.slope for p in pieces])
        for w in range(1, 21):
            self.assertAlmostEqual(self.prof.throughput_at(w),
                                   min(p.at(w) for p in pieces))

    def test_concave_fit_reports_non_concave_data(self):
        doc = make_doc(**{'throughput.points': [[1, 3.0], [2, 3.1],
                                                [3, 4.0], [20, 4.2]]})
        prof = profile_mod.Profile.from_dict(doc)
        pieces, over = prof.concave_fit()
        self.assertEqual([1, 3], [p.pivot for p in pieces])
        self.assertGreater(over, 10.0)


class ProfileValidationTest(base.TestCase):

    def assertInvalid(self, doc, field, source='<memory>'):
        exc = self.assertRaises(exception.InvalidProfile,
                                profile_mod.Profile.from_dict, doc, source)
        self.assertEqual(field, exc.field)
        self.assertIn(source, str(exc))
        self.assertIn(field, str(exc))
        return exc

    def test_non_finite_numbers_are_refused(self):
        # An infinite point would make admission accept any target.
        for value in (float('nan'), float('inf'), -float('inf')):
            exc = self.assertInvalid(
                make_doc(**{'throughput.points': [[1, 3.0], [2, value]]}),
                'throughput.points[1][1]')
            self.assertIn('is not a finite number', str(exc))
        self.assertInvalid(
            make_doc(**{'measurement.max_interpolation_error_pct':
                        float('nan')}),
            'measurement.max_interpolation_error_pct')
        import json
        text = json.dumps(make_doc())
        for bad in ('NaN', 'Infinity', '1e400'):
            doc_text = text.replace('5.5]', '%s]' % bad)
            exc = self.assertRaises(exception.InvalidProfile,
                                    profile_mod.Profile.from_json, doc_text)
            self.assertIn('not JSON', str(exc))

    def test_documents_past_the_size_cap_are_refused(self):
        import json
        doc = make_doc()
        doc['nf']['padding'] = 'x' * profile_mod.MAX_PROFILE_BYTES
        exc = self.assertRaises(exception.InvalidProfile,
                                profile_mod.Profile.from_json,
                                json.dumps(doc))
        self.assertIn('more than the %d it may have'
                      % profile_mod.MAX_PROFILE_BYTES, str(exc))

    def test_missing_and_wrong_fields(self):
        self.assertInvalid(make_doc(**{'nf.name': KeyError}), 'nf')
        self.assertInvalid(make_doc(**{'traffic.packet_bytes': 'big'}),
                           'traffic.packet_bytes')
        self.assertInvalid(make_doc(**{'traffic.packet_bytes': 32}),
                           'traffic.packet_bytes')
        self.assertInvalid(make_doc(**{'throughput.points': [[1, 2.0]]}),
                           'throughput.points')
        self.assertInvalid(
            make_doc(**{'throughput.points': [[1, 2.0], [2, -1]]}),
            'throughput.points[1][1]')
        self.assertInvalid(
            make_doc(**{'latency.points': [[0.1, 1.0], [1.5, 2.0]]}),
            'latency.points[1][0]')
        self.assertInvalid(make_doc(**{'nf.config_digest': 'md5:x'}),
                           'nf.config_digest')
        self.assertInvalid(make_doc(extra=1), '(document)')

    def test_semantic_checks(self):
        self.assertInvalid(
            make_doc(**{'throughput.points': [[2, 2.0], [1, 3.0]]}),
            'throughput.points[1][0]')
        exc = self.assertInvalid(
            make_doc(**{'throughput.points': [[1, 2.0], [24, 3.0]]}),
            'throughput.points[1][0]')
        self.assertIn('platform has only 20', str(exc))
        self.assertInvalid(make_doc(**{'latency.ways': 30}), 'latency.ways')
        self.assertInvalid(make_doc(id='../etc/passwd'), 'id')

    def test_schema_version(self):
        exc = self.assertInvalid(make_doc(schema_version=2),
                                 'schema_version', source='p.json')
        self.assertIn('reads version 1', str(exc))

    def test_not_json(self):
        exc = self.assertRaises(exception.InvalidProfile,
                                profile_mod.Profile.from_json, '{', 'x.json')
        self.assertIn('x.json', str(exc))
        self.assertIn('not JSON', str(exc))

    def test_make_doc_is_valid(self):
        doc = make_doc()
        profile_mod.Profile.from_dict(copy.deepcopy(doc))
        self.assertEqual('lpm-64B-100flows-00000000',
                         profile_mod.make_profile_id(
                             'LPM', {'packet_bytes': 64, 'flows': 100},
                             'sha256:' + '0' * 64))
