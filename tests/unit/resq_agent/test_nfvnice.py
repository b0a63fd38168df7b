import dataclasses
import math
import os
import threading
from unittest import mock

import fixtures
import libvirt

from resq_agent.cmd import agent
from resq_agent.nfvnice import backpressure
from resq_agent.nfvnice import chains
from resq_agent.nfvnice import controller
from resq_agent.nfvnice import costs
from resq_agent.nfvnice import rates
from resq_agent.nfvnice import shares
from resq_agent import service
from resq_agent import virt
from resq_common import profile as profile_mod
from resq_profiler import store as store_mod
from tests import base
from tests.fixtures import libvirt as libvirt_fixture
from tests.unit.resq_profiler import test_profile

U1 = '6f3c1a9e-6d0a-4c4b-9a53-0c1f7b1c0c01'
U2 = '6f3c1a9e-6d0a-4c4b-9a53-0c1f7b1c0c02'
U3 = '6f3c1a9e-6d0a-4c4b-9a53-0c1f7b1c0c03'
D = shares.Demand


class SharesTest(base.TestCase):

    def test_proportional_to_rate_times_cost(self):
        got = shares.compute([D('a', 1000, 100), D('b', 1000, 300),
                              D('c', 2000, 100)])
        # Work 1e5 : 3e5 : 2e5 around a mean of 1024.
        self.assertEqual({'a': 512, 'b': 1536, 'c': 1024}, got)

    def test_bad_rates_never_give_zero_or_negative(self):
        bad = [0, -5, None, float('nan'), float('inf'), float('-inf'),
               '12', True]
        for value in bad:
            got = shares.compute([D('x', value, 100), D('y', 5000, 100),
                                  D('z', 0, 100)], minimum=16)
            for uuid, share in got.items():
                self.assertGreaterEqual(share, 16, (value, uuid))
                self.assertIsInstance(share, int)

    def test_zero_gets_the_floor_unknown_the_groups_mean(self):
        got = shares.compute([D('idle', 0), D('busy', 3000),
                              D('lost', None), D('bad', -1)],
                             minimum=64, maximum=10000)
        self.assertEqual(64, got['idle'])
        # Unknown rates count as an average NF of the group: 3000 each.
        self.assertEqual(got['busy'], got['lost'])
        self.assertEqual(got['busy'], got['bad'])
        self.assertEqual(1365, got['busy'])

    def test_no_usable_rate_is_an_equal_split(self):
        got = shares.compute([D('a', None), D('b', float('nan')),
                              D('c', 0)])
        self.assertEqual(1536, got['a'])
        self.assertEqual(1536, got['b'])
        self.assertEqual(64, got['c'])
        got = shares.compute([D('a', 0), D('b', 0)])
        self.assertEqual({'a': 1024, 'b': 1024}, got)

    def test_bad_costs_count_as_the_mean_cost(self):
        got = shares.compute([D('a', 1000, 200), D('b', 1000, 0),
                              D('c', 1000, float('nan')), D('d', 1000, -3)])
        self.assertEqual(1, len(set(got.values())))

    def test_clamped_to_the_bounds(self):
        got = shares.compute([D('a', 1e9, 1e6), D('b', 1, 1)],
                             minimum=10, maximum=2000)
        self.assertEqual({'a': 2000, 'b': 10}, got)

    def test_bounds_are_checked(self):
        for lo, hi in ((1, 100), (10, 300000), (2000, 1500), (2, 512)):
            self.assertRaises(ValueError, shares.compute, [D('a', 1)],
                              minimum=lo, maximum=hi)
        exc = self.assertRaises(ValueError, shares.check_bounds, 2000, 1500)
        self.assertIn('cpu_shares_min (2000) is above cpu_shares_max',
                      str(exc))

    def test_hysteresis(self):
        self.assertTrue(shares.needs_write(None, 1024, 0.1))
        self.assertTrue(shares.needs_write(0, 1024, 0.1))
        self.assertFalse(shares.needs_write(1024, 1024, 0.0))
        self.assertFalse(shares.needs_write(1024, 1100, 0.1))
        self.assertTrue(shares.needs_write(1024, 1200, 0.1))
        self.assertTrue(shares.needs_write(1024, 900, 0.1))

    def test_groups_of_shared_cores_without_reserved(self):
        got = shares.groups({'a': (1,), 'b': (1, 2), 'c': (2,), 'd': (3,),
                             'r': (3,), 'f1': (), 'f2': (), 'e': (7,)},
                            reserved={'r'})
        self.assertEqual([['f1', 'f2'], ['a', 'b', 'c']], got)


class RatesTest(base.TestCase):

    def test_rates_from_counter_deltas(self):
        t = rates.RateTracker()
        first = t.update({'p': {'tx_packets': 100, 'tx_dropped': 0,
                                'rx_packets': 10, 'rx_bytes': 1000}}, 10.0)
        self.assertIsNone(first['p'].arrival_pps)
        got = t.update({'p': {'tx_packets': 1100, 'tx_dropped': 500,
                              'rx_packets': 30, 'rx_bytes': 126000}}, 12.0)
        self.assertEqual(750.0, got['p'].arrival_pps)
        self.assertEqual(250.0, got['p'].tx_drop_pps)
        self.assertEqual(10.0, got['p'].rx_pps)
        self.assertEqual(500.0, got['p'].rx_kbps)

    def test_reset_missing_and_unpublished_counters(self):
        t = rates.RateTracker()
        t.update({'p': {'tx_packets': 100, 'tx_dropped': 0}}, 0.0)
        got = t.update({'p': {'tx_packets': 200, 'tx_dropped': 0}}, 1.0)
        self.assertEqual(100.0, got['p'].arrival_pps)
        # The same counters again: not published yet, the rate stays.
        again = t.update({'p': {'tx_packets': 200, 'tx_dropped': 0}}, 2.0)
        self.assertEqual(100.0, again['p'].arrival_pps)
        # OVS restarted: counters went backwards.
        got = t.update({'p': {'tx_packets': 5, 'tx_dropped': 0}}, 3.0)
        self.assertIsNone(got['p'].arrival_pps)
        got = t.update({'p': {'tx_packets': 50}}, 4.0)
        self.assertIsNone(got['p'].arrival_pps)
        self.assertIsNone(got['p'].rx_kbps)

    def test_instance_rates_sum_ports(self):
        pr = {'a1': rates.PortRates(tx_pps=10, tx_drop_pps=1),
              'a2': rates.PortRates(tx_pps=20, tx_drop_pps=2),
              'b1': rates.PortRates()}
        got = rates.instance_rates(pr, {U1: ['a1', 'a2'], U2: ['b1'],
                                        U3: ['gone']})
        self.assertEqual({U1: (33.0, 3.0), U2: (None, None),
                          U3: (None, None)}, got)


class ChainsTest(base.TestCase):

    def test_parses_chains_and_costs(self):
        got = chains.parse({'chains': [
            {'name': 'c', 'entry_port': 'dpdk0',
             'instances': [{'uuid': U1.upper(), 'cycles_per_packet': 250},
                           U2]}]})
        self.assertEqual((chains.Chain('c', 'dpdk0', (U1, U2)),),
                         got.chains)
        self.assertEqual({U1: 250.0}, got.costs)

    def test_bad_documents_name_the_field(self):
        cases = [
            ([], 'chains'),
            ({'chains': [{'entry_port': 'p', 'instances': [U1]}]},
             'chains[0].name'),
            ({'chains': [{'name': 'c', 'instances': [U1]}]},
             'chains[0].entry_port'),
            ({'chains': [{'name': 'c', 'entry_port': 'p',
                          'instances': []}]}, 'chains[0].instances'),
            ({'chains': [{'name': 'c', 'entry_port': 'p',
                          'instances': ['vm1']}]}, 'chains[0].instances[0]'),
            ({'chains': [{'name': 'c', 'entry_port': 'p', 'instances': [
                {'uuid': U1, 'cycles_per_packet': -1}]}]},
             'chains[0].instances[0].cycles_per_packet'),
            ({'chains': [{'name': 'c', 'entry_port': 'p', 'instances': [
                {'uuid': U1, 'cycles_per_packet': math.nan}]}]},
             'chains[0].instances[0].cycles_per_packet'),
            ({'chains': [{'name': 'c', 'entry_port': 'p',
                          'instances': [U1]},
                         {'name': 'c', 'entry_port': 'q',
                          'instances': [U2]}]}, 'chains[1].name'),
            ({'chains': [{'name': 'c', 'entry_port': 'p', 'max_kbps': 0,
                          'instances': [U1]}]}, 'chains[0].max_kbps'),
            ({'chains': [{'name': 'c', 'entry_port': 'p', 'max_kbps': 1.5,
                          'instances': [U1]}]}, 'chains[0].max_kbps'),
            ({'chains': [{'name': 'c', 'entry_port': 'p',
                          'instances': [U1, U1]}]},
             'chains[0].instances[1]'),
            ({'chains': [
                {'name': 'c', 'entry_port': 'p', 'instances': [
                    {'uuid': U1, 'cycles_per_packet': 1}]},
                {'name': 'd', 'entry_port': 'p', 'instances': [
                    {'uuid': U1, 'cycles_per_packet': 2}]}]},
             'chains[1].instances[0].cycles_per_packet'),
        ]
        for doc, field in cases:
            exc = self.assertRaises(chains.InvalidChains, chains.parse, doc,
                                    'f.json')
            self.assertIn('Invalid chains file f.json: %s:' % field,
                          str(exc))

    def test_file_is_reread_and_errors_are_clear(self):
        cf = chains.ChainFile(self.tmp + '/none.json')
        exc = self.assertRaises(chains.InvalidChains, cf.load)
        self.assertIn('cannot be read', str(exc))
        path = self.write_json('c.json', {'chains': [
            {'name': 'c', 'entry_port': 'p', 'instances': [U1]}]})
        cf = chains.ChainFile(path)
        self.assertEqual(1, len(cf.load().chains))
        self.write_json('c.json', '{"chains": [')
        exc = self.assertRaises(chains.InvalidChains, cf.load)
        self.assertIn('is not valid JSON', str(exc))
        self.assertEqual(chains.ChainSet(), chains.ChainFile(None).load())


class BackpressureTest(base.TestCase):

    chain = chains.Chain('c', 'dpdk0', (U1, U2))

    def test_mark_hold_relax_release(self):
        bp = backpressure.Backpressure(high=0.01, low=0.001, clear_passes=2,
                                       margin=0.0, step=0.5, min_kbps=100)
        step = bp.step_chain
        d = step(self.chain, {U1: (1000, 0), U2: (1000, 0)}, 8000)
        self.assertEqual(('none', 0), (d.action, d.rate_kbps))
        d = step(self.chain, {U1: (1000, 0), U2: (1000, 400)}, 8000)
        self.assertEqual(('mark', 4800, U2), (d.action, d.rate_kbps,
                                              d.bottleneck))
        self.assertEqual(480, d.burst_kb)
        # Still dropping a lot at the policed rate: tighter.
        d = step(self.chain, {U1: (600, 0), U2: (600, 300)}, 4800)
        self.assertEqual(('tighten', 2400), (d.action, d.rate_kbps))
        # Between the thresholds: hold.
        d = step(self.chain, {U1: (300, 0), U2: (300, 1)}, 2400)
        self.assertEqual(('hold', 2400), (d.action, d.rate_kbps))
        clear = {U1: (300, 0), U2: (300, 0)}
        self.assertEqual('hold', step(self.chain, clear, 2400).action)
        d = step(self.chain, clear, 2400)
        self.assertEqual(('relax', 3600), (d.action, d.rate_kbps))
        step(self.chain, clear, 3600)
        d = step(self.chain, clear, 3600)
        self.assertEqual(('relax', 5400), (d.action, d.rate_kbps))
        step(self.chain, clear, 5400)
        d = step(self.chain, clear, 5400)
        # 8100 would pass the 8000 the chain had when marked.
        self.assertEqual(('release', 0), (d.action, d.rate_kbps))
        self.assertFalse(bp.state('c').marked)

    def test_unknown_rates_keep_what_is_in_place(self):
        bp = backpressure.Backpressure(min_kbps=100)
        d = bp.step_chain(self.chain, {U1: (None, None)}, 5000)
        self.assertEqual('none', d.action)
        d = bp.step_chain(self.chain, {U2: (100, 50)}, None)
        self.assertEqual('none', d.action)
        self.assertIn('entry rate of dpdk0 unknown', d.reason)
        d = bp.step_chain(self.chain, {U2: (100, 50)}, 1000)
        self.assertEqual('mark', d.action)
        d = bp.step_chain(self.chain, {}, None)
        self.assertEqual(('hold', d.rate_kbps), (d.action, 475))
        self.assertEqual(475, bp.state('c').rate_kbps)

    def test_floor_and_minimum_burst(self):
        bp = backpressure.Backpressure(min_kbps=500)
        d = bp.step_chain(self.chain, {U1: (100, 99)}, 1000)
        self.assertEqual((500, backpressure.MIN_BURST_KB),
                         (d.rate_kbps, d.burst_kb))

    def test_thresholds_are_checked(self):
        exc = self.assertRaises(ValueError, backpressure.Backpressure,
                                high=0.01, low=0.02)
        self.assertIn('backpressure_low_drop_ratio', str(exc))


class FakeDomain:
    """A domain of a driver with a cgroup weight (absent here: QEMU)."""

    def __init__(self, flags_supported=True):
        self.params = {'cpu_shares': 1024, 'vcpu_period': 100000}
        self.flags_supported = flags_supported
        self.calls = []

    def isActive(self):
        return True

    def ID(self):
        return 7

    def schedulerParameters(self):
        return dict(self.params)

    def setSchedulerParametersFlags(self, params, flags):
        self.calls.append(('flags', params, flags))
        if not self.flags_supported:
            err = libvirt.libvirtError('unsupported flags')
            err.err = (libvirt.VIR_ERR_INVALID_ARG,) + (None,) * 8
            raise err
        self.params.update(params)

    def setSchedulerParameters(self, params):
        self.calls.append(('plain', params))
        self.params.update(params)


class HypervisorSharesTest(base.TestCase):

    def hyp(self, dom):
        hyp = virt.Hypervisor(libvirt_fixture.URI)
        conn = mock.Mock()
        conn.lookupByUUIDString.return_value = dom
        self.useFixture(fixtures.MockPatchObject(hyp, '_connection',
                                                 return_value=conn))
        return hyp

    def test_live_cpu_shares(self):
        dom = FakeDomain()
        hyp = self.hyp(dom)
        self.assertEqual((7, 'cpu_shares', 1024), hyp.cpu_shares(U1))
        self.assertEqual(('applied', 2048), hyp.set_cpu_shares(U1, 2048))
        self.assertEqual([('flags', {'cpu_shares': 2048},
                           libvirt.VIR_DOMAIN_AFFECT_LIVE)], dom.calls)

    def test_drivers_without_flags(self):
        dom = FakeDomain(flags_supported=False)
        hyp = self.hyp(dom)
        self.assertEqual(('applied', 300), hyp.set_cpu_shares(U1, 300))
        self.assertEqual(['flags', 'plain'], [c[0] for c in dom.calls])
        self.assertEqual({'cpu_shares': 300}, dom.calls[1][1])

    def test_no_weight(self):
        dom = FakeDomain()
        dom.params = {}
        hyp = self.hyp(dom)
        self.assertIsNone(hyp.cpu_shares(U1))
        exc = self.assertRaises(virt.SharesUnsupported, hyp.set_cpu_shares,
                                U1, 100)
        self.assertIn('no CPU weight', str(exc))


class ControllerConfigTest(base.TestCase):

    def test_bad_options_are_refused_at_start(self):
        self.flags('resq_agent', cpu_shares_min=5000, cpu_shares_max=4000)
        exc = self.assertRaises(controller.InvalidNfvniceConfig,
                                controller.Controller, self.conf, None, None)
        self.assertIn('Invalid NFVnice options in [resq_agent]', str(exc))
        self.assertIn('cpu_shares_min (5000) is above cpu_shares_max',
                      str(exc))
        self.flags('resq_agent', cpu_shares_min=64, cpu_shares_max=10000,
                   backpressure_low_drop_ratio=0.5)
        exc = self.assertRaises(controller.InvalidNfvniceConfig,
                                controller.Controller, self.conf, None, None)
        self.assertIn('backpressure_low_drop_ratio', str(exc))


class PaceTest(base.TestCase):

    def test_warns_once_when_a_pass_outgrows_the_period(self):
        logs = self.useFixture(fixtures.FakeLogger(level='INFO'))
        self.flags('resq_agent', nfvnice_interval=0.1)
        now = [0.0]

        class SlowHypervisor:
            def instances(self):
                now[0] += delay[0]
                return []

        delay = [0.08]
        ctl = controller.Controller(self.conf, SlowHypervisor(), None,
                                    clock=lambda: now[0])
        self.assertEqual(80.0, ctl.run_once()['pass_ms'])
        ctl.run_once()
        self.assertEqual(1, logs.output.count('cannot hold this period'))
        delay[0] = 0.01
        ctl.run_once()
        self.assertIn('fit nfvnice_interval again', logs.output)


class SkipUnchangedSharesTest(base.TestCase):

    def test_libvirt_is_asked_only_for_shares_that_move(self):
        inst = [virt.Instance('u%d' % i, 'n', 'f', {}, {0: (3,)},
                              domain_id=7) for i in range(2)]
        calls = []

        class Hyp:
            def instances(self):
                return inst

            def cpu_shares(self, uuid):
                calls.append(('read', uuid))
                return 7, 'cpu_shares', 1024

            def set_cpu_shares(self, uuid, shares):
                calls.append(('write', uuid, shares))
                return 'applied', shares

        ctl = controller.Controller(self.conf, Hyp(), None)
        ctl.run_once()
        self.assertEqual([('read', 'u0'), ('read', 'u1')], calls)
        # Nothing moved, same run of each domain: no libvirt call at all.
        calls.clear()
        ctl._applied = {'u0': (7, 1024, 'applied'),
                        'u1': (7, 1024, 'applied')}
        ctl.run_once()
        self.assertEqual([], calls)
        # u1 started again (a new domain id): asked again.
        inst[1] = dataclasses.replace(inst[1], domain_id=8)
        ctl.run_once()
        self.assertEqual([('read', 'u1')], calls)


class ServiceRunEveryTest(base.TestCase):

    def test_periodic_until_stopped(self):
        svc = service.AgentService(self.conf, mock.Mock(), host='h')
        calls = []
        done = threading.Event()

        def tick():
            calls.append(1)
            if len(calls) == 3:
                done.set()
            if len(calls) == 2:
                raise RuntimeError('one failed pass')

        svc.run_every('t', 0.01, tick)
        self.assertTrue(done.wait(5))
        svc._stop.set()
        for thread in svc._threads:
            thread.join(5)
        # A failing pass is logged and the next one still runs.
        self.assertGreaterEqual(len(calls), 3)


class RunCommandTest(base.TestCase):

    def _run(self, host_report=None):
        mgr, svc = mock.Mock(), mock.Mock()
        mgr.hypervisor = virt.Hypervisor(libvirt_fixture.URI)
        mgr.host_report = host_report
        with mock.patch.object(agent, '_manager', return_value=mgr), \
                mock.patch('resq_agent.service.AgentService',
                           return_value=svc):
            self.assertEqual(0, agent._run(self.conf))
        return svc

    def test_service_runs_the_pass_when_enabled(self):
        self.flags('resq_agent', nfvnice=True, nfvnice_interval=3.0,
                   dma_sizing=False, ovsdb_connection='')
        name, interval, func = self._run().run_every.call_args[0]
        # The interval is read again before every wait (mutable).
        self.assertEqual(('resq-agent-nfvnice', 3.0), (name, interval()))
        self.assertIsInstance(func.__self__, controller.Controller)
        self.flags('resq_agent', nfvnice_interval=5.0)
        self.assertEqual(5.0, interval())

    def test_off_by_default(self):
        self.flags('resq_agent', dma_sizing=False)
        self.assertFalse(self._run().run_every.called)

    def test_host_report_heartbeat_when_resq_api_is_configured(self):
        self.flags('resq_agent', dma_sizing=False, host_report_interval=7)
        report = mock.Mock()
        name, interval, func = self._run(report).run_every.call_args[0]
        # The reporter's own (jittered) wait: it keeps the interval.
        self.assertEqual(('resq-agent-host-report', report.next_wait,
                          report.heartbeat), (name, interval, func))


class ProfileCostsTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.logs = self.useFixture(fixtures.FakeLogger())
        self.dir = os.path.join(self.tmp, 'profiles')
        store = store_mod.ProfileStore(self.dir)
        # Peak 5.5 Mpps on one core.
        store.put(profile_mod.Profile.from_dict(test_profile.make_doc()))
        self.pid = 'lpm-64B-100000flows-abcdef12'
        self.costs = costs.ProfileCosts(self.dir, 2.2)

    def inst(self, profile_id):
        specs = {'resq:profile': profile_id} if profile_id else {}
        return virt.Instance(U1, 'i', 'f', specs, {0: (1,)})

    def test_cost_from_the_peak_throughput(self):
        self.assertAlmostEqual(400.0, self.costs.cost(self.inst(self.pid)))
        self.assertIsNone(self.costs.cost(self.inst(None)))
        self.assertIsNone(costs.ProfileCosts(None, 2.2).cost(
            self.inst(self.pid)))

    def test_missing_and_invalid_profiles_give_no_cost_said_once(self):
        for _ in range(2):
            self.assertIsNone(self.costs.cost(self.inst('nope')))
        self.assertEqual(1, self.logs.output.count('profile nope'))
        with open(os.path.join(self.dir, self.pid + '.json'), 'w') as f:
            f.write('{"schema_version": 1}')
        self.assertIsNone(self.costs.cost(self.inst(self.pid)))
        self.assertIn('no cost per packet for instance %s from profile %s'
                      % (U1, self.pid), self.logs.output)
        self.assertIsNone(self.costs.cost(self.inst('../etc/passwd')))
