"""resq-admit --slo-file up to the point where it needs the cloud."""

import os

from resq_nova.cmd import admit
from resq_profiler import store as store_mod
from tests.unit.resq_nova.admission import test_greedy
from tests.unit import test_cmd


class AdmitFileCommandTest(test_cmd.CommandTestCase):

    def write(self, text):
        path = os.path.join(self.tmp, 'chain.yaml')
        with open(path, 'w') as f:
            f.write(text)
        return path

    def test_term_options_conflict_with_the_file(self):
        rc, out, err = self.run_main(
            admit.main, '--slo-file', self.write('[]'), '--term', 'fw',
            '--throughput-mpps', '3', '--dry-run')
        self.assertEqual(1, rc)
        self.assertEqual('ERROR: --term, --throughput-mpps describe one '
                         'term; with --slo-file every term comes from the '
                         'file: drop them or --slo-file\n', err)

    def test_file_needs_image_and_network_to_boot(self):
        rc, out, err = self.run_main(admit.main, '--slo-file',
                                     self.write('[]'))
        self.assertEqual(1, rc)
        self.assertIn('needs --image, --network', err)

    def test_invalid_file_is_one_line_without_traceback(self):
        path = self.write('- name: fw\n  profile: p\n  throughput_mpps: x\n'
                          '  latency_p95_us: 20\n')
        rc, out, err = self.run_main(admit.main, '--slo-file', path,
                                     '--dry-run')
        self.assertEqual(1, rc)
        err = without_api_warning(self, err)
        self.assertEqual("ERROR: SLO file %s: term 1 (fw): field "
                         "throughput_mpps is 'x'; give a positive number of "
                         "Mpps\n" % path, err)
        self.assertNotIn('Traceback', out + err)

    def test_unknown_profiles_are_each_refused(self):
        store_mod.ProfileStore(self.store_dir).put(
            test_greedy.make_profile())
        path = self.write(
            '- {name: fw, profile: lpm-64B-100000flows-abcdef12, '
            'throughput_mpps: 3, latency_p95_us: 25}\n'
            '- {name: nat, profile: nat-x, throughput_mpps: 3, '
            'latency_p95_us: 25}\n'
            '- {name: ids, profile: ids-x, throughput_mpps: 3, '
            'latency_p95_us: 25}\n')
        rc, out, err = self.run_main(admit.main, '--slo-file', path,
                                     '--dry-run', '--format', 'json')
        self.assertEqual(1, rc)
        lines = without_api_warning(self, err).splitlines()
        self.assertEqual(3, len(lines), err)
        self.assertTrue(lines[0].startswith(
            "REFUSED (profile): SLO term nat: No profile 'nat-x'"))
        self.assertTrue(lines[1].startswith(
            "REFUSED (profile): SLO term ids: No profile 'ids-x'"))
        self.assertEqual('Nothing was created: the terms of %s are admitted '
                         'whole or not at all' % path, lines[2])
        self.assertIn('"constraint": "profile"', out)


def without_api_warning(test, err):
    """stderr without the warning that profiles come from local files."""
    first, _, rest = err.partition('\n')
    test.assertIn('WARNING: [resq_api] is not configured: profiles are read '
                  'from', first)
    return rest
