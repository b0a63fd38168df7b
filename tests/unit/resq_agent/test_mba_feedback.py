"""The agent's MBA feedback controller against the kernel's stepping."""

import random

from resq_agent import mba_feedback
from tests import base


def plant(demand, per_percent, noise=0.0, rng=None):
    """A group's MiB/s at a percentage: linear throttle, capped by demand."""
    def measure(percent):
        bw = min(demand, per_percent * percent)
        if noise:
            bw *= 1 + rng.uniform(-noise, noise)
        return bw
    return measure


def run(ctl, measure, steps):
    readings = []
    for _ in range(steps):
        bw = measure(ctl.percent)
        readings.append(bw)
        ctl.step(bw)
    return readings


class ControllerTest(base.TestCase):

    def test_proportional_lands_at_once_and_holds_still(self):
        # 100 MiB/s per percent, demand 9,000: target 4,200 -> 40 %.
        ctl = mba_feedback.ProportionalController(4200)
        readings = run(ctl, plant(9000, 100), 6)
        self.assertEqual(40, ctl.percent)
        self.assertEqual([9000, 4000, 4000, 4000, 4000, 4000], readings)

    def test_kernel_steps_take_a_step_a_reading_and_keep_swinging(self):
        ctl = mba_feedback.StepController(4200)
        readings = run(ctl, plant(9000, 100), 12)
        # 90 (still 9,000: demand-bound), 80, ... five readings to 40 %.
        self.assertEqual([9000, 9000, 8000, 7000, 6000, 5000, 4000, 5000,
                          4000, 5000, 4000, 5000], readings)
        ours = mba_feedback.ProportionalController(4200)
        mine = run(ours, plant(9000, 100), 12)
        self.assertLess(mba_feedback.error_pct(mine[6:], 4200),
                        mba_feedback.error_pct(readings[6:], 4200))

    def test_demand_bound_group_stays_unlimited(self):
        ctl = mba_feedback.ProportionalController(5000)
        run(ctl, plant(3000, 100), 5)
        self.assertEqual(100, ctl.percent)

    def test_follows_a_change_of_demand(self):
        ctl = mba_feedback.ProportionalController(4200)
        run(ctl, plant(9000, 100), 3)
        self.assertEqual(40, ctl.percent)
        # The group now needs less than the limit: the limit rises to
        # 100 % and stays, since it is demand-bound there.
        run(ctl, plant(2000, 100), 3)
        self.assertEqual(100, ctl.percent)
        # Heavy again: back to 40 % in a reading.
        run(ctl, plant(9000, 100), 2)
        self.assertEqual(40, ctl.percent)

    def test_never_below_the_minimum_nor_off_a_step(self):
        ctl = mba_feedback.ProportionalController(
            100, min_bandwidth=15, bandwidth_gran=10)
        run(ctl, plant(9000, 100), 4)
        self.assertEqual(20, ctl.percent)  # 15 rounded up to a step
        ctl = mba_feedback.StepController(100, min_bandwidth=10)
        run(ctl, plant(9000, 100), 20)
        self.assertEqual(10, ctl.percent)

    def test_noisy_readings_settle(self):
        rng = random.Random(3)
        ctl = mba_feedback.ProportionalController(4200)
        readings = run(ctl, plant(9000, 100, noise=0.03, rng=rng), 40)
        self.assertIn(ctl.percent, (30, 40))
        self.assertLess(mba_feedback.error_pct(readings[5:], 4200), 10.0)

    def test_idle_reading_changes_nothing(self):
        ctl = mba_feedback.ProportionalController(4200, start=60)
        self.assertEqual(60, ctl.step(0))

    def test_bad_settings(self):
        for kw in ({'target_mibps': 0}, {'target_mibps': 10,
                                         'bandwidth_gran': 0}):
            self.assertRaises(ValueError,
                              mba_feedback.ProportionalController, **kw)
        self.assertIsNone(mba_feedback.error_pct([], 10))


class SimulateTest(base.TestCase):

    def test_proportional_beats_the_kernels_steps_over_seeds(self):
        ours = [mba_feedback.simulate(mba_feedback.ProportionalController,
                                      s) for s in range(10)]
        kernel = [mba_feedback.simulate(mba_feedback.StepController, s)
                  for s in range(10)]
        self.assertLess(sum(ours), sum(kernel))
        self.assertEqual(ours[3], mba_feedback.simulate(
            mba_feedback.ProportionalController, 3))
