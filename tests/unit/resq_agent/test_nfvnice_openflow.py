"""NFVnice's OpenFlow side: parsing, validation, meters, measured costs."""

import json

from resq_agent.nfvnice import chains as chains_mod
from resq_agent.nfvnice import costs as costs_mod
from resq_agent.nfvnice import meters as meters_mod
from resq_agent.nfvnice import openflow
from resq_agent.nfvnice import shares as shares_mod
from tests import base

PORTS = """OFPST_PORT reply (OF1.3) (xid=0x2): 2 ports
  port  vhu-a: rx pkts=5, bytes=300, drop=0, errs=0, frame=0, over=0, crc=0
           tx pkts=1000, bytes=64000, drop=25, errs=0, coll=0
           duration=6.2s
  port  "dpdk0": rx pkts=900, bytes=?, drop=?, errs=?, frame=?, over=?, crc=?
           tx pkts=0, bytes=0, drop=?, errs=?, coll=?
"""
METERS = """OFPST_METER reply (OF1.3) (xid=0x2):
meter:57344 flow_count:1 packet_in_count:50 byte_in_count:2300 duration:0.5s bands:
0: packet_count:40 byte_count:1840
meter:7 flow_count:0 packet_in_count:1 byte_in_count:2 duration:1s bands:
"""  # noqa


class ParseTest(base.TestCase):

    def test_ports(self):
        ports = openflow.parse_ports(PORTS)
        self.assertEqual({'rx_packets': 5, 'rx_bytes': 300, 'rx_dropped': 0,
                          'tx_packets': 1000, 'tx_bytes': 64000,
                          'tx_dropped': 25}, ports['vhu-a'])
        # "?" is a counter the port does not keep: unknown, never 0.
        self.assertIsNone(ports['dpdk0']['rx_bytes'])
        self.assertEqual(900, ports['dpdk0']['rx_packets'])

    def test_meters(self):
        meters = openflow.parse_meters(METERS)
        self.assertEqual(openflow.MeterCounters(50, 2300, 40), meters[57344])
        self.assertEqual(openflow.MeterCounters(1, 2, 0), meters[7])

    def test_flow_cookies_are_the_agents_only(self):
        text = (' cookie=0x5e5a00000000e001, table=0, priority=65000\n'
                ' cookie=0x77, table=0\n')
        self.assertEqual({0xE001}, openflow.parse_flow_meters(text))


class MatchTest(base.TestCase):

    def test_canonical(self):
        self.assertEqual('ip,nw_dst=10.1.0.0/16',
                         openflow.check_match(' ip, nw_dst=10.1.0.0/16'))

    def test_refuses_what_is_the_agents_or_not_a_field(self):
        for bad, word in (('in_port=1', 'in_port'),
                          ('dl_vlan=1,actions=drop', 'actions'),
                          ('priority=9', 'priority'),
                          ('dl_vlan=1;drop', 'plain'),
                          ('dl_vlan=1,,ip', 'empty'),
                          ('bogus', 'shorthand'), ('', 'non-empty')):
            exc = self.assertRaises(openflow.InvalidMatch,
                                    openflow.check_match, bad)
            self.assertIn(word, str(exc))

    def test_flow_spec_marks_and_resubmits(self):
        spec = openflow.flow_spec(0xE000, 'dpdk0', 'dl_vlan=101', 65000, 15)
        self.assertIn('cookie=0x5e5a00000000e000', spec)
        self.assertIn('reg15=0/0x1', spec)
        self.assertTrue(spec.endswith('actions=meter:57344,'
                                      'load:1->NXM_NX_REG15[0],'
                                      'resubmit(,0)'))
        self.assertRaises(openflow.InvalidMatch, openflow.flow_spec, 1,
                          'a,b', 'ip', 1, 0)

    def test_chains_file_match_and_priority(self):
        uuid = '6f3c1a9e-6d0a-4c4b-9a53-0c1f7b1c0c01'
        doc = {'chains': [{'name': 'a', 'entry_port': 'dpdk0',
                           'match': 'dl_vlan=101',
                           'instances': [{'uuid': uuid, 'priority': 2}]}]}
        chain_set = chains_mod.parse(json.loads(json.dumps(doc)))
        self.assertEqual('dl_vlan=101', chain_set.chains[0].match)
        self.assertEqual({uuid: 2.0}, chain_set.priorities)
        doc['chains'][0]['match'] = 'actions=drop'
        exc = self.assertRaises(chains_mod.InvalidChains, chains_mod.parse,
                                doc)
        self.assertIn('chains[0].match', str(exc))
        doc['chains'][0]['match'] = 'ip'
        doc['chains'][0]['instances'][0]['priority'] = 0
        exc = self.assertRaises(chains_mod.InvalidChains, chains_mod.parse,
                                doc)
        self.assertIn('chains[0].instances[0].priority', str(exc))


class FakeOps:
    """The privileged functions' contract, over a dict."""

    def __init__(self):
        self.meters = {}      # id -> [rate, burst, packets, bytes, dropped]
        self.flows = {}       # id -> (port, match)
        self.fail = set()
        self.calls = []

    def _call(self, name, *args):
        self.calls.append((name,) + args)
        if name in self.fail:
            raise RuntimeError('%s refused' % name)

    def meter_stats(self):
        return {m: tuple(v[2:]) for m, v in self.meters.items()}

    def owned(self):
        return sorted(self.flows), sorted(self.meters)

    def set_meters(self, changes):
        self._call('set_meters', changes)
        for meter, rate, burst, new in changes:
            self.meters[meter] = [rate, burst, 0, 0, 0]
        return {}

    def set_chain_flow(self, meter, port, match):
        self._call('set_chain_flow', meter, port, match)
        self.flows[meter] = (port, match)

    def remove_chain(self, meter):
        self._call('remove_chain', meter)
        self.flows.pop(meter, None)
        self.meters.pop(meter, None)


class ChainMetersTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.now = 10.0
        self.ops = FakeOps()
        self.cm = meters_mod.ChainMeters(self.ops, 100, 2,
                                         clock=lambda: self.now)

    def test_first_apply_clears_leftovers_then_installs(self):
        self.ops.meters[101] = [5, 5, 0, 0, 0]
        self.ops.flows[101] = ('p', 'ip')
        actions = self.cm.apply({'a': ('p1', 'ip', 0, 0)})
        self.assertEqual([('remove_chain', 101)], self.ops.calls[:1])
        self.assertEqual([{'action': 'meter', 'chain': 'a', 'meter': 100,
                           'rate_kbps': None, 'outcome': 'set',
                           'burst_kb': openflow.UNLIMITED_KBPS}], actions)
        self.assertEqual({100: ('p1', 'ip')}, self.ops.flows)
        # Nothing changed: nothing written.
        self.ops.calls.clear()
        self.assertEqual([], self.cm.apply({'a': ('p1', 'ip', 0, 0)}))
        self.assertEqual([], self.ops.calls)

    def test_rates_from_meter_counters_and_reset_on_change(self):
        self.cm.apply({'a': ('p1', 'ip', 0, 0)})
        self.now += 2
        self.ops.meters[100][2:] = [2000, 2000000, 0]
        rates = self.cm.rates()['a']
        self.assertEqual((1000.0, 8000.0, 0.0), (
            rates.entry_pps, rates.entry_kbps, rates.metered_pps))
        # The rate changes: the switch restarts the counters.
        self.cm.apply({'a': ('p1', 'ip', 4000, 400)})
        self.assertEqual([4000, 400, 0, 0, 0], self.ops.meters[100])
        self.now += 1
        self.ops.meters[100][2:] = [1000, 1000000, 500]
        rates = self.cm.rates()['a']
        self.assertEqual((1000.0, 8000.0, 500.0), (
            rates.entry_pps, rates.entry_kbps, rates.metered_pps))

    def test_failure_is_reported_and_the_next_pass_resyncs(self):
        self.cm.apply({'a': ('p1', 'ip', 0, 0)})
        self.ops.fail.add('set_meters')
        actions = self.cm.apply({'a': ('p1', 'ip', 4000, 400)})
        self.assertEqual('failed', actions[0]['outcome'])
        self.assertIn('refused', actions[0]['error'])
        self.ops.fail.clear()
        self.ops.calls.clear()
        actions = self.cm.apply({'a': ('p1', 'ip', 4000, 400)})
        self.assertEqual(('remove_chain', 100), self.ops.calls[0])
        self.assertEqual('set', actions[0]['outcome'])
        self.assertEqual(4000, self.ops.meters[100][0])

    def test_removed_chains_free_their_meter_and_the_range_is_bounded(self):
        self.cm.apply({'a': ('p', 'ip', 0, 0), 'b': ('p', 'udp', 0, 0)})
        actions = self.cm.apply({'a': ('p', 'ip', 0, 0),
                                 'b': ('p', 'udp', 0, 0),
                                 'c': ('p', 'tcp', 0, 0)})
        self.assertEqual('failed', actions[-1]['outcome'])
        self.assertIn('nfvnice_meter_count', actions[-1]['error'])
        actions = self.cm.apply({'c': ('p', 'tcp', 0, 0)})
        self.assertEqual({'c'}, {a['chain'] for a in actions
                                 if a.get('outcome') == 'set'})
        self.assertEqual(1, len(self.ops.flows))


class MeasuredCostsTest(base.TestCase):

    def test_only_busy_passes_count_and_samples_are_smoothed(self):
        m = costs_mod.MeasuredCosts(cpu_ghz=2.0, smoothing=0.5)
        m.update({'a': 0}, {'a': 0}, busy=set())
        # 1 ms of CPU for 1000 packets: 2000 cycles each, but A was idle
        # (no drops): a poll-mode NF's CPU time says nothing.
        m.update({'a': 10 ** 6}, {'a': 1000}, busy=set())
        self.assertIsNone(m.cost('a'))
        m.update({'a': 2 * 10 ** 6}, {'a': 2000}, busy={'a'})
        self.assertEqual(2000.0, m.cost('a'))
        m.update({'a': 3 * 10 ** 6}, {'a': 4000}, busy={'a'})
        self.assertEqual(1500.0, m.cost('a'))
        # Too few packets: no sample; an instance gone: forgotten.
        m.update({'a': 4 * 10 ** 6}, {'a': 4010}, busy={'a'})
        self.assertEqual(1500.0, m.cost('a'))
        m.update({}, {}, busy=set())
        self.assertIsNone(m.cost('a'))


class PriorityTest(base.TestCase):

    def test_priority_multiplies_the_share(self):
        shares = shares_mod.compute([
            shares_mod.Demand('a', 1000, 100, priority=2),
            shares_mod.Demand('b', 1000, 100)], 2, 10000)
        self.assertAlmostEqual(2.0, shares['a'] / shares['b'], places=2)
        # Unknown rates: still weighted by priority.
        shares = shares_mod.compute([
            shares_mod.Demand('a', None, 100, priority=3),
            shares_mod.Demand('b', None, 100)], 2, 10000)
        self.assertAlmostEqual(3.0, shares['a'] / shares['b'], places=2)
