import json
import os

from resq_profiler.cmd import profiler as profiler_cmd
from resq_profiler.slomo import store as slomo_store
from resq_profiler import store as store_mod
from tests.unit import test_cmd


class SlomoCommandTest(test_cmd.CommandTestCase):

    def _profile(self):
        rc, _, err = self.run_main(profiler_cmd.main, 'profile', 'firewall')
        self.assertEqual(0, rc, err)
        (pid,) = store_mod.ProfileStore(self.store_dir).ids()
        return pid

    def test_train_then_check(self):
        pid = self._profile()
        rc, out, err = self.run_main(profiler_cmd.main, 'slomo-train', pid,
                                     '--runs', '20', '--draws', '2')
        self.assertEqual(0, rc, err)
        self.assertIn('2 draws of 20 contention runs', out)
        self.assertIn('training draw 2 of 2', out)
        self.assertIn('20/20 contention runs', out)
        path = os.path.join(self.store_dir, pid + '.slomo')
        self.assertIn('stored in %s' % path, out)
        model = slomo_store.ModelStore(self.store_dir).get(pid)
        self.assertEqual('Firewall', model.name)
        # Two draws of 20 runs and the solo row each.
        self.assertEqual(42, model.doc['training']['runs'])
        self.assertEqual(2, model.doc['training']['draws'])
        self.assertEqual(40, model.doc['training']['contention_runs'])
        rc, out, _ = self.run_main(profiler_cmd.main, 'slomo-check', pid)
        self.assertEqual(0, rc)
        self.assertIn('OK %s: Firewall' % path, out)
        # Still one profile in the store: the model file is not one.
        rc, out, _ = self.run_main(profiler_cmd.main, 'list')
        self.assertEqual(0, rc)
        self.assertNotIn('.slomo', out)

        # Edited after training: refused, non-zero exit.
        with open(path) as f:
            doc = json.load(f)
        doc['solo_mpps'] *= 3
        with open(path, 'w') as f:
            json.dump(doc, f)
        rc, _, err = self.run_main(profiler_cmd.main, 'slomo-check', pid)
        self.assertEqual(1, rc)
        self.assertIn('REFUSED', err)
        self.assertIn('checksum mismatch', err)
        self.assertIn('own cache partition', err)

    def test_bad_input(self):
        rc, _, err = self.run_main(profiler_cmd.main, 'slomo-train', 'nope')
        self.assertEqual(1, rc)
        self.assertIn("No profile 'nope'", err)
        pid = self._profile()
        self.assertIn("--runs: must be a positive whole number, got '0'",
                      self.usage_error(profiler_cmd.main, 'slomo-train', pid,
                                       '--runs', '0'))
        self.assertIn("--draws: must be a positive whole number, got '0'",
                      self.usage_error(profiler_cmd.main, 'slomo-train', pid,
                                       '--draws', '0'))
        rc, _, err = self.run_main(profiler_cmd.main, 'slomo-check', pid)
        self.assertEqual(1, rc)
        self.assertIn('no such file', err)
