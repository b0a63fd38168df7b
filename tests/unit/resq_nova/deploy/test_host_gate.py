"""Which disabled hosts admission counts, and what enabling one does."""

from resq_common.clients import compute as compute_mod
from resq_nova.admission import reserved as admission
from resq_nova.deploy import deployment
from tests import base


class Nova:
    def __init__(self, refuse=()):
        self.refuse = set(refuse)
        self.enabled = []

    def set_service_status(self, service_id, disabled, reason=None):
        if service_id in self.refuse:
            raise compute_mod.ComputeError(method='PUT', url='/x',
                                           reason='403 policy')
        self.enabled.append(service_id)


def gate():
    services = [
        {'id': 's1', 'host': 'h1', 'status': 'enabled'},
        {'id': 's2', 'host': 'h2', 'status': 'disabled',
         'disabled_reason': compute_mod.FREED_REASON + 'plan-1'},
        {'id': 's3', 'host': 'h3', 'status': 'disabled',
         'disabled_reason': 'maintenance'},
        {'id': 's4', 'host': 'h4', 'status': 'disabled',
         'disabled_reason': compute_mod.FREED_REASON + 'plan-2'}]
    hyps = [{'id': 'rp-%d' % n, 'service': {'host': 'h%d' % n}}
            for n in range(1, 5)]
    return deployment.HostGate(services, hyps)


class HostGateTest(base.TestCase):

    def test_freed_and_blocked(self):
        g = gate()
        self.assertEqual({'rp-3'}, g.blocked)
        self.assertEqual({'rp-2': 'h2', 'rp-4': 'h4'}, g.freed)
        body = {'provider_summaries': {
            'rp-1': {}, 'rp-3': {}, 'llc-3': {'root_provider_uuid': 'rp-3'},
            'llc-1': {'root_provider_uuid': 'rp-1'}}}
        self.assertEqual({'rp-1', 'llc-1'}, set(admission.without_roots(
            body, g.blocked)['provider_summaries']))

    def test_enable_stops_at_the_first_refusal(self):
        g = gate()
        nova = Nova(refuse={'s4'})
        exc = self.assertRaises(deployment.HostNotEnabled, g.enable, nova,
                                ['h4', 'h2'])
        # h2 first (sorted), then h4 refused: said, with what was enabled.
        self.assertEqual(['s2'], nova.enabled)
        self.assertIn('room of h4', str(exc))
        self.assertIn('enabled before it: h2', str(exc))
        self.assertIn('nothing was booted', str(exc))
        self.assertEqual(
            [{'host': 'h2', 'outcome': 'enabled',
              'detail': 'admission needs its room'}],
            g.enable(Nova(), ['h2']))
