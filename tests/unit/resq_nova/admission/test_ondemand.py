from resq_common import profile as profile_mod
from resq_nova.admission import greedy
from resq_nova.admission import ondemand
from resq_nova.cmd import admit
from resq_nova.deploy import flavors
from tests import base
from tests.unit.resq_profiler import test_profile


class Args:
    slo = 'on-demand'
    term = 'od'
    latency_p95_us = 50.0
    dry_run = False
    heat_template = None
    image = None
    network = None
    profile = throughput_mpps = None


class OnDemandAdmissionTest(base.TestCase):

    def test_flavor_passes_the_filter_checks(self):
        specs = ondemand.flavor_specs('od', 42.5, flavors.FlavorOptions(
            2, 512, 1, 'large'))
        self.assertEqual('2', specs['resources_OD:CUSTOM_RESQ_ONDEMAND_CORE'])
        self.assertEqual('42.5', specs['resq:latency_p95_us'])
        self.assertNotIn('resources_LLC:CUSTOM_LLC_WAY', specs)

    def test_best_case_refuses_targets_below_the_floor(self):
        prof = profile_mod.Profile.from_dict(test_profile.make_doc())
        floor = prof.latency_floor_us
        exc = self.assertRaises(greedy.AdmissionRefused, ondemand.best_case,
                                'od', floor * 0.9, prof)
        self.assertEqual(ondemand.LATENCY, exc.constraint)
        self.assertIn(prof.profile_id, exc.reason)
        ondemand.best_case('od', floor, prof)
        ondemand.best_case('od', 1.0, None)

    def test_on_demand_needs_no_profile_or_throughput(self):
        self.assertEqual(['--image', '--network'],
                         admit.missing_options(Args()))
        args = Args()
        args.slo = 'reserved'
        self.assertIn('--throughput-mpps', admit.missing_options(args))


class SharingWarningsTest(base.TestCase):
    """resq-admit's SLOMO warning asks about the lease's ways."""

    def setUp(self):
        super().setUp()
        import os

        from resq_profiler.slomo import store as slomo_store
        from tests.unit.resq_profiler.slomo import util
        self.dir = os.path.join(self.tmp, 'profiles')
        for name in ('LPM', 'Stats'):
            slomo_store.ModelStore(self.dir).put(util.trained_doc(name))
        self.lpm = util.model('LPM')
        self.stats = util.model('Stats')

    def _warnings(self, ways, mpps):
        class Placement:
            def get_provider(self, uuid):
                return {'name': 'host1'}

        class Compute:
            def list_all_servers(self):
                return [{'OS-EXT-SRV-ATTR:host': 'host1', 'flavor': {
                    'extra_specs': {'resq:slo': 'on-demand',
                                    'resq:profile': 'stats-64B',
                                    'resq:throughput_mpps': '0.01'}}}]

        class Store:
            directory = self.dir

        class Profile:
            profile_id = 'lpm-64B'

        room = [{'provider': 'd1', 'root': 'h1', 'free': 2, 'ways': ways}]
        return ondemand.sharing_warnings(Placement(), Compute(), Store(),
                                         room, Profile(), mpps)

    def test_lease_ways_from_traits(self):
        self.assertEqual(4, ondemand.lease_ways(
            ['CUSTOM_CAT_L3', 'CUSTOM_RESQ_ONDEMAND_WAYS_4']))
        for traits in (None, [], ['CUSTOM_RESQ_ONDEMAND_WAYS_x'],
                       ['CUSTOM_RESQ_ONDEMAND_WAYS_0']):
            self.assertIsNone(ondemand.lease_ways(traits))

    def test_warns_for_a_small_lease_only(self):
        stats = self.stats.contentiousness
        in2 = self.lpm.predict_mpps([stats], 2)
        whole = self.lpm.predict_mpps([stats])
        self.assertLess(in2, 0.9 * whole)
        rate = (in2 + whole) / 2
        (text,) = self._warnings(2, rate)
        self.assertIn('on host1: admitting lpm-64B to the shared cache '
                      'class (with stats-64B) of 2 ways', text)
        self.assertIn('lpm-64B itself: predicted %.3f Mpps' % in2, text)
        self.assertEqual([], self._warnings(20, rate))
        # A lease that does not report its ways: the whole LLC.
        self.assertEqual([], self._warnings(None, rate))
        # A lease larger than the models' LLC: said, not a crash.
        (text,) = self._warnings(40, rate)
        self.assertIn('no SLOMO prediction for its lease', text)
        self.assertIn('1 to 20 ways', text)
