import itertools
import sys
from unittest import mock

from resq_nova.admission import milp
from resq_nova.admission import packing
from tests import base
from tests.unit.resq_nova.admission import test_packing

CAP = test_packing.CAP


def brute_force(targets, cores, ways):
    """Fewest servers by trying every choice of minimal configurations."""
    options = [packing.configurations(CAP, t) for t in targets]
    best = None
    for choice in itertools.product(*options):
        items = sorted((w for cfg in choice for w in cfg), reverse=True)
        # First fit decreasing is optimal for these tiny cases? No: try
        # every server count from the lower bound up with the exact check.
        n = max(-(-len(items) // cores), -(-sum(items) // ways))
        while not _fits(items, n, cores, ways):
            n += 1
        best = n if best is None else min(best, n)
    return best


def _fits(items, n, cores, ways):
    loads = [[0, 0] for _ in range(n)]

    def place(i):
        if i == len(items):
            return True
        tried = set()
        for s in loads:
            key = tuple(s)
            if key in tried:
                continue
            tried.add(key)
            if s[0] < cores and s[1] + items[i] <= ways:
                s[0] += 1
                s[1] += items[i]
                if place(i + 1):
                    return True
                s[0] -= 1
                s[1] -= items[i]
        return False

    return place(0)


class MilpTest(base.TestCase):

    def groups(self, targets):
        return milp.groups_from_terms(
            [('t%d' % i, t, 'nf') for i, t in enumerate(targets)],
            lambda key: CAP)

    def test_matches_brute_force(self):
        for targets, cores, ways in (([0.9, 0.9, 1.5], 3, 6),
                                     ([0.5, 0.9, 1.2, 0.6], 2, 8),
                                     ([1.7, 0.9], 4, 8)):
            res = milp.solve(self.groups(targets), cores, ways,
                             time_limit=30)
            self.assertTrue(res.optimal)
            self.assertEqual(0.0, res.gap_pct)
            self.assertEqual(brute_force(targets, cores, ways), res.servers,
                             targets)
            self._check_schedule(res, targets, cores, ways)

    def _check_schedule(self, res, targets, cores, ways):
        for i, t in enumerate(targets):
            cfg = res.configs['t%d' % i]
            self.assertGreaterEqual(sum(CAP[w] for w in cfg), t - 1e-9)
        per_server = {}
        for name, w, server in res.assignment:
            per_server.setdefault(server, []).append(w)
        self.assertLessEqual(len(per_server), res.servers)
        for items in per_server.values():
            self.assertLessEqual(len(items), cores)
            self.assertLessEqual(sum(items), ways)

    def test_identical_terms_are_grouped(self):
        groups = self.groups([0.9] * 50 + [1.5] * 10)
        self.assertEqual(2, len(groups))
        res = milp.solve(groups, 9, 18, time_limit=30)
        self.assertEqual(60, len(res.configs))
        self._check_schedule(res, [0.9] * 50 + [1.5] * 10, 9, 18)

    def test_warm_start_and_large_targets(self):
        targets = [6.0, 0.9]
        warm = ({'t0': (8,) * 7, 't1': (1, 1)}, [[8, 8], [8, 8], [8, 8],
                                                 [8, 1, 1]])
        res = milp.solve(self.groups(targets), 4, 16, time_limit=30,
                         warm_start=warm, config_limit=20)
        self._check_schedule(res, targets, 4, 16)
        self.assertLessEqual(res.servers, 4)

    def test_bad_input(self):
        self.assertRaises(ValueError, milp.solve, self.groups([0.9]), 9, 18,
                          time_limit=0)
        exc = self.assertRaises(ValueError, milp.solve,
                                self.groups([0.9] * 10), 2, 4, time_limit=5,
                                max_servers=1)
        self.assertIn('no schedule', str(exc))

    def test_terms_too_large_to_enumerate_use_counts(self):
        targets = [50.0, 0.9]
        res = milp.solve(self.groups(targets), 9, 18, time_limit=30)
        self._check_schedule(res, targets, 9, 18)
        self.assertTrue(res.optimal)

    def test_missing_solver_is_explained(self):
        with mock.patch.dict(sys.modules, {
                'pyomo.contrib.appsi.solvers': None}):
            exc = self.assertRaises(milp.SolverUnavailable, milp.solve,
                                    self.groups([0.9]), 9, 18)
        self.assertIn('pip install pyomo highspy', str(exc))
