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
