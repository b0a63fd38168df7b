"""The console scripts, run in-process through their main()."""

import contextlib
import io
import json
import os

from resq_nova.cmd import evaluate
from resq_nova.cmd import plan
from resq_profiler.cmd import profiler as profiler_cmd
from resq_profiler import store as store_mod
from tests import base
from tests.unit.resq_profiler import test_profile


class CommandTestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        self.store_dir = os.path.join(self.tmp, 'profiles')
        self.conf_file = os.path.join(self.tmp, 'resq.conf')
        with open(self.conf_file, 'w') as f:
            f.write('[resq]\nprofile_dir = %s\n[resq_profiler]\n'
                    'profile_dir = %s\n' % (self.store_dir, self.store_dir))

    def run_main(self, main, *args):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(['--config-file', self.conf_file] + list(args))
        return rc, out.getvalue(), err.getvalue()

    def usage_error(self, main, *args):
        """Run a command line refused as it is parsed: its one line."""
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(err):
            exc = self.assertRaises(SystemExit, main,
                                    ['--config-file', self.conf_file]
                                    + list(args))
        self.assertEqual(2, exc.code, args)
        lines = err.getvalue().splitlines()
        self.assertEqual(1, len(lines), err.getvalue())
        return lines[0]


class ProfilerCommandTest(CommandTestCase):

    def test_profile_show_list_plot(self):
        png = os.path.join(self.tmp, 'stats.png')
        rc, out, err = self.run_main(profiler_cmd.main, 'profile', 'stats',
                                     '--plot', png)
        self.assertEqual(0, rc, err)
        self.assertIn('[throughput  1] ways 1', out)
        self.assertIn('[latency', out)
        ids = store_mod.ProfileStore(self.store_dir).ids()
        prof = store_mod.ProfileStore(self.store_dir).get(ids[0])
        runs = prof.measurement['measurements']
        # The summary counts every run (repeats too), the points measured
        # and the curves' models.
        self.assertIn('(%d + %d measurements, %d repeated, %d + %d points '
                      'measured, curves saturating-miss/queueing, noise '
                      '0.00%%' % (
                          runs['throughput'], runs['latency'],
                          runs['repeats'],
                          prof.measurement['points']['throughput'],
                          prof.measurement['points']['latency']), out)
        self.assertEqual(1, len(ids))
        with open(png, 'rb') as f:
            self.assertEqual(b'\x89PNG', f.read(4))
        rc, out, _ = self.run_main(profiler_cmd.main, 'show', ids[0])
        self.assertEqual(0, rc)
        self.assertIn('concave fit', out)
        self.assertIn('points measured, %d + %d measurements (%d '
                      'repeated), noise 0.00%%' % (
                          runs['throughput'], runs['latency'],
                          runs['repeats']), out)
        self.assertIn('curves: throughput fitted (saturating-miss model); '
                      'latency fitted (queueing model)', out)
        rc, out, _ = self.run_main(profiler_cmd.main, 'list')
        self.assertIn(ids[0], out)
        rc, out, _ = self.run_main(profiler_cmd.main, 'show', ids[0],
                                   '--json')
        self.assertEqual(ids[0], json.loads(out)['id'])

    def test_validate(self):
        good = self.write_json('good.json', test_profile.make_doc())
        bad = self.write_json('bad.json', test_profile.make_doc(
            **{'traffic.flows': 0}))
        rc, out, _ = self.run_main(profiler_cmd.main, 'validate', good)
        self.assertEqual(0, rc)
        self.assertIn('OK', out)
        rc, out, err = self.run_main(profiler_cmd.main, 'validate', good,
                                     bad)
        self.assertEqual(1, rc)
        self.assertIn(bad, err)
        self.assertIn('traffic.flows', err)

    def test_validate_deeply_nested_json(self):
        # Python's decoder recurses per level: without a bound this ended
        # in a RecursionError traceback.
        deep = self.write_json('deep.json', '[' * 100000 + ']' * 100000)
        nested = test_profile.make_doc()
        nested['nf']['extra'] = json.loads('[' * 40 + ']' * 40)
        moderate = self.write_json('moderate.json', nested)
        good = self.write_json('good.json', test_profile.make_doc())
        rc, out, err = self.run_main(profiler_cmd.main, 'validate', deep,
                                     moderate, good)
        self.assertEqual(1, rc)
        self.assertNotIn('Traceback', err)
        lines = err.strip().splitlines()
        self.assertEqual(2, len(lines), err)
        self.assertIn('INVALID Invalid profile %s: field (document): not '
                      'JSON: arrays and objects are nested 100000 levels '
                      'deep, more than the 32' % deep, lines[0])
        self.assertIn('%s: field (document)' % moderate, lines[1])
        self.assertIn('nested 42 levels deep', lines[1])
        self.assertIn('OK %s' % good, out)

    def test_bad_input_exits_non_zero_and_stores_nothing(self):
        self.assertEqual(
            "resq-profiler profile: --packet-bytes: must be a whole number "
            "from 64 to 9216, got '10' (see resq-profiler profile --help)",
            self.usage_error(profiler_cmd.main, 'profile', 'LPM',
                             '--packet-bytes', '10'))
        self.assertIn("--flows: must be a positive whole number, got '0'",
                      self.usage_error(profiler_cmd.main, 'profile-catalog',
                                       '--flows', '0'))
        for args, text in ((['profile', 'Nope'], "Unknown NF 'Nope'"),
                           (['profile', 'LPM', '--nf-config', '/no/such'],
                            'cannot read NF configuration'),
                           (['show', 'missing-id'], 'No profile')):
            rc, _, err = self.run_main(profiler_cmd.main, *args)
            self.assertEqual(1, rc, args)
            self.assertIn(text, err)
        self.assertEqual([], store_mod.ProfileStore(self.store_dir).ids())

    def test_catalog(self):
        rc, out, _ = self.run_main(profiler_cmd.main, 'catalog')
        self.assertEqual(0, rc)
        self.assertEqual(9, len(out.strip().splitlines()))


class PlanCommandTest(CommandTestCase):

    def test_example_plan(self):
        out_json = os.path.join(self.tmp, 'plan.json')
        rc, out, err = self.run_main(plan.main, '--servers', '30',
                                     '--json', out_json)
        self.assertEqual(0, rc, err)
        self.assertIn('(9/9) profile Suricata', out)
        with open(out_json) as f:
            doc = json.load(f)
        self.assertEqual(27, len(doc['admitted']))
        self.assertEqual(9, len(doc['refused']))
        self.assertEqual({'latency'}, {r['constraint']
                                       for r in doc['refused']})
        self.assertGreater(doc['servers_used'], 1)
        # Profiles are reused on the next run.
        rc, out, _ = self.run_main(plan.main, '--servers', '30')
        self.assertIn('reusing', out)

    def test_cluster_too_small(self):
        rc, out, _ = self.run_main(plan.main, '--servers', '1')
        self.assertEqual(0, rc)
        self.assertIn('cluster_capacity', out)

    def test_bad_slo_file(self):
        path = self.write_json('slo.json', '{"terms": 3}')
        rc, _, err = self.run_main(plan.main, '--slo-file', path)
        self.assertEqual(1, rc)
        self.assertIn(path, err)


class EvaluateCommandTest(CommandTestCase):

    def test_small_run_writes_json_and_figures(self):
        out_json = os.path.join(self.tmp, 'ev.json')
        figs = os.path.join(self.tmp, 'figs')
        rc, out, err = self.run_main(
            evaluate.main, '--sets', 'sensitive,insensitive', '--terms', '18',
            '--schemes', 'agnostic,even_cat,prediction,resq_greedy,'
            'resq_optimal', '--noise-pct', '1',
            '--time-limit', '20', '--json', out_json, '--figures', figs)
        self.assertEqual(0, rc, err)
        self.assertIn('... profiled Stats', out)
        self.assertIn('sensitive / resq_optimal', out)
        with open(out_json) as f:
            doc = json.load(f)
        self.assertEqual({'sensitive', 'insensitive'}, set(doc['sets']))
        self.assertEqual(0, doc['sets']['sensitive']['resq_optimal']
                         ['violation_pct'])
        self.assertIn('gap_pct', doc['sets']['sensitive']['resq_optimal'])
        self.assertEqual(1.0, doc['config']['noise_pct'])
        self.assertIn('prediction_error_pct',
                      doc['sets']['sensitive']['prediction'])
        self.assertIn('mean_pp', doc['predictor'])
        for name in ('violations.png', 'violations_throughput.png',
                     'violations_latency.png', 'servers.png',
                     'prediction_error.png'):
            with open(os.path.join(figs, name), 'rb') as f:
                self.assertEqual(b'\x89PNG', f.read(4))

    def test_custom_slo_file(self):
        path = self.write_json('slo.json', {'terms': [
            {'name': 'big-nat', 'nf': 'MazuNAT', 'throughput_mpps': 6.0},
            {'name': 'fw', 'nf': 'firewall', 'throughput_mpps': 0.3,
             'latency_p95_us': 200}]})
        out_json = os.path.join(self.tmp, 'ev.json')
        rc, out, err = self.run_main(
            evaluate.main, '--sets', 'insensitive', '--terms', '9',
            '--schemes', 'resq_greedy,resq_optimal', '--slo-file', path,
            '--json', out_json)
        self.assertEqual(0, rc, err)
        with open(out_json) as f:
            doc = json.load(f)
        self.assertEqual({'insensitive', 'custom'}, set(doc['sets']))
        self.assertEqual(0, doc['sets']['custom']['resq_greedy']
                         ['violation_pct'])
        self.assertGreaterEqual(doc['sets']['custom']['resq_greedy']
                                ['instances'], 4)

    def test_bad_input_leaves_no_output(self):
        out_json = os.path.join(self.tmp, 'ev.json')
        self.assertEqual('resq-evaluate: --terms 0: should be greater than '
                         'or equal to 1',
                         self.usage_error(evaluate.main, '--json', out_json,
                                          '--terms', '0'))
        for args, text in ((['--sets', 'spicy'], "unknown SLO set 'spicy'"),
                           (['--time-limit', '0'], 'time limit'),
                           (['--cores', '-1'], 'at least one core'),
                           (['--slo-file', self.write_json('s.json', '{')],
                            'not JSON'),
                           (['--slo-file', self.write_json(
                               't.json', {'terms': [{'nf': 'Nope'}]})],
                            "terms[0].nf: Unknown NF 'Nope'"),
                           (['--slo-file', self.write_json(
                               'u.json', {'terms': [
                                   {'nf': 'LPM', 'throughput_mpps': -1}]})],
                            'terms[0].throughput_mpps must be a positive')):
            rc, _, err = self.run_main(evaluate.main, '--json', out_json,
                                       *args)
            self.assertEqual(1, rc, args)
            self.assertIn(text, err)
            self.assertFalse(os.path.exists(out_json))
