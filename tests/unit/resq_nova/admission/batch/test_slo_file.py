import json
import os

import fixtures

from resq_nova.admission.batch import slo_file
from tests import base

GOOD = """
- name: fw
  profile: lpm-64B-100000flows-abcdef12
  throughput_mpps: 8
  latency_p95_us: 25
  chain: edge
- name: nat
  profile: lpm-64B-100000flows-abcdef12
  throughput_mpps: 6.5
  latency_p95_us: 30
  chain: edge
  packet_bytes: 64
  max_instances: 3
- name: ids
  profile: lpm-64B-100000flows-abcdef12
  throughput_mpps: 4
  latency_p95_us: 25
"""


class ParseTest(base.TestCase):

    def error(self, text, path='chain.yaml'):
        exc = self.assertRaises(slo_file.InvalidSLOFile, slo_file.parse,
                                text, path)
        self.assertTrue(str(exc).startswith('SLO file %s: ' % path), exc)
        return str(exc)

    def test_terms_in_file_order(self):
        terms = slo_file.parse(GOOD, 'chain.yaml')
        self.assertEqual(['fw', 'nat', 'ids'], [t.name for t in terms])
        self.assertEqual([1, 2, 3], [t.index for t in terms])
        self.assertEqual(['edge', 'edge', None], [t.chain for t in terms])
        self.assertEqual((6.5, 30.0, 64, 3), (
            terms[1].throughput_mpps, terms[1].latency_p95_us,
            terms[1].packet_bytes, terms[1].max_instances))
        self.assertIsNone(terms[0].packet_bytes)
        self.assertIsInstance(terms[0].throughput_mpps, float)

    def test_mapping_with_terms_and_json(self):
        doc = [{'name': 'fw', 'profile': 'p1', 'throughput_mpps': 1,
                'latency_p95_us': 20}]
        by_key = slo_file.parse(json.dumps({'terms': doc}), 'x.json')
        self.assertEqual(['fw'], [t.name for t in by_key])
        self.assertEqual(by_key, slo_file.parse(json.dumps(doc), 'x.yaml'))

    def test_load_reads_the_file(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'chain.yaml')
        with open(path, 'w') as f:
            f.write(GOOD)
        self.assertEqual(3, len(slo_file.load(path)))
        exc = self.assertRaises(slo_file.InvalidSLOFile, slo_file.load,
                                path + '.missing')
        self.assertIn('chain.yaml.missing: cannot be read', str(exc))

    def test_missing_field_names_term_and_field(self):
        text = GOOD.replace('  latency_p95_us: 30\n', '')
        message = self.error(text)
        self.assertIn('term 2 (nat): field latency_p95_us is missing', message)
        self.assertIn('every term needs name, profile, throughput_mpps, '
                      'latency_p95_us', message)

    def test_bad_numbers(self):
        for bad, shown in (("'ten'", "'ten'"), ('-1', '-1'), ('0', '0'),
                           ('true', 'True')):
            message = self.error(GOOD.replace('throughput_mpps: 8',
                                              'throughput_mpps: %s' % bad))
            self.assertIn('term 1 (fw): field throughput_mpps is %s; give a '
                          'positive number of Mpps' % shown, message)
        message = self.error(GOOD.replace('max_instances: 3',
                                          'max_instances: 0'))
        self.assertIn('term 2 (nat): field max_instances is 0; give a whole '
                      'number of at least 1', message)
        message = self.error(GOOD.replace('packet_bytes: 64',
                                          'packet_bytes: 64.5'))
        self.assertIn('field packet_bytes is 64.5', message)

    def test_unknown_field_lists_the_known_ones(self):
        message = self.error(GOOD.replace('chain: edge\n- name: nat',
                                          'chian: edge\n- name: nat'))
        self.assertIn('term 1 (fw): field chian is unknown; the fields are '
                      'name, profile, throughput_mpps, latency_p95_us '
                      '(required) and chain, packet_bytes, max_instances, '
                      'mem_bw_mibps (optional)', message)

    def test_names_must_be_ids_and_unique(self):
        message = self.error(GOOD.replace('name: ids', 'name: i d s'))
        self.assertIn("term 3 (i d s): field name is 'i d s'; use 1-128 "
                      'letters, digits', message)
        message = self.error(GOOD.replace('name: ids', 'name: fw'))
        self.assertIn("term 3: name 'fw' is also term 1's", message)
        message = self.error(GOOD.replace('chain: edge', 'chain: 12 3', 1))
        self.assertIn("field chain is '12 3'", message)

    def test_shape_errors(self):
        self.assertIn('holds no terms', self.error(''))
        self.assertIn('holds no terms', self.error('[]'))
        self.assertIn('holds no terms', self.error('name: fw'.replace(
            'name', 'terms')))
        self.assertIn("unknown top-level key(s) chain",
                      self.error('{chain: x, terms: []}'))
        self.assertIn('term 1 is str, not a mapping', self.error('- fw'))
        self.assertIn('is not valid YAML or JSON', self.error('- [fw'))
        self.assertIn('is not valid JSON', self.error('[', 'x.json'))
