"""The fleet benchmark's parts that need no server (``api --fleet``)."""

import asyncio
import random

from benchmarks import api_fleet
from tests import base


def outcome(status, ms, kind='heartbeat', retry_after=None, error=None):
    return api_fleet.Outcome(kind, status, ms, retry_after, error)


class FleetTest(base.TestCase):

    def test_uwsgi_options_as_the_plugin_sets_them(self):
        options = api_fleet._plugin_uwsgi_options()
        self.assertEqual({'need-app': 'true', 'listen': '128',
                          'harakiri': '30'}, options)

    def test_summary_counts_errors_and_503s(self):
        outs = [outcome(204, 10), outcome(200, 20, 'report'),
                outcome(503, 5, retry_after='10'), outcome(503, 6),
                outcome(0, 30000, error='TimeoutError'), outcome(404, 3)]
        s = api_fleet.summarise(outs, 2.0)
        self.assertEqual((6, 2, 1.0), (s['offered'], s['ok'], s['rate']))
        self.assertEqual((2, 1, 2, 1, 1), (
            s['server_errors'], s['with_retry_after'], s['status_503'],
            s['refused'], s['client_errors']))
        self.assertEqual({'503': 2, 'TimeoutError': 1, '404': 1},
                         s['errors_by_kind'])
        self.assertEqual(30000, s['max_ms'])
        self.assertFalse(api_fleet._passes(s, 2))
        ok = api_fleet.summarise([outcome(204, 50)] * 100, 1.0)
        self.assertTrue(api_fleet._passes(ok, 100))
        # Behind the offered rate, or slow: not held.
        self.assertFalse(api_fleet._passes(ok, 200))
        slow = api_fleet.summarise([outcome(204, 101)] * 100, 1.0)
        self.assertFalse(api_fleet._passes(slow, 100))

    def test_the_mix_of_writes(self):
        calls = []

        class Client:
            def timed(self, kind, due, method, path, body=None,
                      version=None, token=None):
                calls.append((kind, method, path, version, body is None))

        fleet = api_fleet.Fleet(Client())
        fleet.random = random.Random(1)
        for _ in range(2000):
            fleet._write(0.0)
        reports = [c for c in calls if c[0] == 'report']
        beats = [c for c in calls if c[0] == 'heartbeat']
        self.assertAlmostEqual(api_fleet.CHANGED, len(reports) / 2000.0,
                               delta=0.02)
        self.assertTrue(all(c[2].endswith('/heartbeat') and c[4] and
                            c[3] == 'resq 1.2' for c in beats))
        self.assertTrue(all(c[3] == 'resq 1.1' and not c[4]
                            for c in reports))
        calls[:] = []
        fleet.heartbeats = False
        for _ in range(50):
            fleet._write(0.0)
        self.assertEqual({'report'}, {c[0] for c in calls})

    def test_open_loop_arrivals(self):
        class Client:
            async def timed(self, kind, due, *args, **kwargs):
                return outcome(204, 1)

        fleet = api_fleet.Fleet(Client())
        fleet._write = lambda due: Client().timed('heartbeat', due)
        outs = asyncio.run(fleet.writes(400, 0.5))
        # Poisson arrivals at 400/s for half a second.
        self.assertTrue(140 <= len(outs) <= 260, len(outs))

    def test_cpu_used_counts_new_processes_from_zero(self):
        before = ({1: 1.0, 2: 2.0}, {9: 5.0})
        after = ({1: 1.5, 2: 2.0, 3: 0.25}, {9: 5.5})
        self.assertEqual((0.75, 0.5), api_fleet.CPU.used(before, after))
        # This process's own figures are read from /proc.
        import os
        procs = api_fleet._processes()
        self.assertIn(os.getpid(), procs)
        self.assertEqual(os.getppid(), procs[os.getpid()][0])
