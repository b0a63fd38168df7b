import collections

import fixtures

from resq_agent import dma
from resq_agent import metadata
from resq_agent import ovs
from resq_profiler import nfmodel
from tests import base

MIB = 1024 * 1024
# ResQ's Xeon E5-2695 v4: 45 MiB, 20 ways, DDIO in 2 of them.
WAY = 45 * MIB // 20

Domain = collections.namedtuple('Domain', 'id io_ways way_size_bytes')
Topology = collections.namedtuple('Topology', 'domains')
Assignment = collections.namedtuple(
    'Assignment', 'instance_uuid domain_id packet_bytes')


class FormulaTest(base.TestCase):

    def test_reproduces_the_papers_figures(self):
        # ResQ §4.3: 12 queues of 2048 descriptors = 24576 buffers take
        # 3 MB at 64 B (2 lines each) and 37.5 MB at 1518 B (25 lines).
        self.assertEqual(24576, 12 * 2048)
        self.assertEqual(2, nfmodel.buffer_lines(64))
        self.assertEqual(25, nfmodel.buffer_lines(1518))
        self.assertEqual(3 * MIB, 24576 * nfmodel.buffer_bytes(64))
        self.assertEqual(37.5 * MIB, 24576 * nfmodel.buffer_bytes(1518))
        # And back: 3 MiB of DDIO holds exactly those 24576 small buffers.
        self.assertEqual(24576, nfmodel.ddio_buffers(3 * MIB, 64))
        self.assertEqual(24576, nfmodel.ddio_buffers(37.5 * MIB, 1518))

    def test_total_buffers_of_a_domain(self):
        ddio = 2 * WAY
        for pkt in (64, 512, 1518, 9018):
            n = dma.total_buffers(2, WAY, pkt)
            self.assertLessEqual(n * nfmodel.buffer_bytes(pkt), ddio)
            self.assertGreater((n + 1) * nfmodel.buffer_bytes(pkt), ddio)
        # 4.5 MiB / 1600 B and / 128 B.
        self.assertEqual(2949, dma.total_buffers(2, WAY, 1518))
        self.assertEqual(36864, dma.total_buffers(2, WAY, 64))
        self.assertEqual(0, dma.total_buffers(0, WAY, 64))


class RingSizeTest(base.TestCase):

    def test_rounds_down_to_a_power_of_two(self):
        self.assertEqual((2048, False), dma.ring_size(2949))
        self.assertEqual((512, False), dma.ring_size(1000))
        self.assertEqual((1024, False), dma.ring_size(1024))

    def test_capped_at_ovs_maximum(self):
        self.assertEqual((4096, False), dma.ring_size(36864))

    def test_floor_is_reported(self):
        self.assertEqual((64, True), dma.ring_size(10, minimum=64))
        # A floor that is not a power of two is rounded down to one.
        self.assertEqual((64, True), dma.ring_size(10, minimum=100))
        self.assertEqual((1, True), dma.ring_size(0, minimum=1))

    def test_every_result_is_valid_for_ovs(self):
        for buffers in range(0, 20000, 37):
            for minimum in (1, 3, 64, 5000):
                size, clamped = dma.ring_size(buffers, minimum)
                self.assertEqual(0, size & (size - 1), size)
                self.assertTrue(1 <= size <= dma.MAX_DESCRIPTORS)
                if not clamped:
                    self.assertLessEqual(size, buffers)


class PlanTest(base.TestCase):

    def test_ports_and_guests_share_ddio(self):
        ports = [ovs.NicPort('dpdk0', 0, rx_queues=2),
                 ovs.NicPort('dpdk1', 0)]
        guests = [Assignment('small', 0, 64), Assignment('mtu', 0, None)]
        b = dma.plan_domain(0, 2, WAY, guests, ports, packet_bytes=1518,
                            ovs_share=0.5)
        ddio = 2 * WAY
        self.assertEqual(ddio, b.ddio_bytes)
        self.assertEqual(nfmodel.ddio_buffers(ddio / 2, 1518), b.ovs_buffers)
        # 3 RX queues, each with an RX and a TX ring: 6 rings share them.
        self.assertLessEqual(6 * b.descriptors, b.ovs_buffers)
        self.assertGreater(6 * 2 * b.descriptors, b.ovs_buffers)
        self.assertEqual(('dpdk0', 'dpdk1'), b.ports)
        budgets = {g.instance_uuid: g for g in b.guests}
        self.assertEqual(64, budgets['small'].packet_bytes)
        self.assertEqual(1518, budgets['mtu'].packet_bytes)
        # Equal bytes, so small packets get more buffers; together they
        # stay inside the guests' half of DDIO.
        self.assertGreater(budgets['small'].mbufs, budgets['mtu'].mbufs)
        used = sum(g.mbufs * nfmodel.buffer_bytes(g.packet_bytes)
                   for g in b.guests)
        self.assertLessEqual(used, ddio / 2)
        self.assertEqual((), b.warnings)

    def test_share_zero_leaves_ports_alone_share_one_publishes_nothing(self):
        ports = [ovs.NicPort('dpdk0', 0)]
        guests = [Assignment('a', 0, 64)]
        b = dma.plan_domain(0, 2, WAY, guests, ports, ovs_share=0.0)
        self.assertEqual(0, b.descriptors)
        self.assertEqual(dma.total_buffers(2, WAY, 64), b.guests[0].mbufs)
        b = dma.plan_domain(0, 2, WAY, guests, ports, ovs_share=1.0)
        self.assertEqual((), b.guests)
        self.assertEqual(dma.ring_size(dma.total_buffers(2, WAY, 1518) // 2)
                         [0], b.descriptors)

    def test_floors_warn_naming_the_option(self):
        ports = [ovs.NicPort('dpdk%d' % i, 0, rx_queues=8) for i in range(4)]
        guests = [Assignment('g%d' % i, 0, 9018) for i in range(40)]
        b = dma.plan_domain(0, 1, 1 * MIB, guests, ports, packet_bytes=9018,
                            min_descriptors=64, min_guest_buffers=32)
        self.assertEqual(64, b.descriptors)
        self.assertTrue(all(g.mbufs == 32 for g in b.guests))
        self.assertIn('dma_min_descriptors', b.warnings[0])
        self.assertIn('dma_min_guest_buffers', b.warnings[1])

    def test_bad_share(self):
        exc = self.assertRaises(ValueError, dma.plan_domain, 0, 2, WAY, [],
                                [], ovs_share=1.5)
        self.assertIn('ovs_share', str(exc))

    def test_ports_follow_their_numa_node(self):
        domains = [Domain(0, 2, WAY), Domain(1, 4, WAY)]
        ports = [ovs.NicPort('p0', 0), ovs.NicPort('p1', 1),
                 ovs.NicPort('lost', None)]
        budgets, rings = dma.plan(domains, [Assignment('x', 1, 64)], ports)
        by_id = {b.domain_id: b for b in budgets}
        self.assertEqual(('p0', 'lost'), by_id[0].ports)
        self.assertEqual(('p1', 'lost'), by_id[1].ports)
        self.assertEqual(by_id[0].descriptors, rings['p0'])
        self.assertEqual(by_id[1].descriptors, rings['p1'])
        # A port of unknown node fits the tighter domain.
        self.assertEqual(min(by_id[0].descriptors, by_id[1].descriptors),
                         rings['lost'])
        self.assertLess(rings['p0'], rings['p1'])
        self.assertEqual((), by_id[0].guests)
        self.assertEqual(['x'], [g.instance_uuid for g in by_id[1].guests])


class FakePorts:
    """Failure injection for the OVS side (the real one is functional)."""

    connection_string = 'unix:/x'

    def __init__(self, ports=(), down=False):
        self.ports = list(ports)
        self.down = down
        self.rings = {}
        self.budgets = {}

    def nic_ports(self):
        if self.down:
            raise ovs.OvsUnavailable(connection='unix:/x', reason='gone')
        return self.ports

    def set_rings(self, rings):
        self.rings.update(rings)
        return list(rings)

    def set_instance_budgets(self, budgets):
        self.budgets = dict(budgets)
        return list(budgets)


class FakeMetadata:

    def __init__(self, error=None):
        self.calls = []
        self.error = error

    def publish_budget(self, budget):
        self.calls.append(budget)
        if self.error:
            raise self.error
        return True


class DmaSizerTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.logs = self.useFixture(fixtures.FakeLogger())
        self.topology = Topology([Domain(0, 2, WAY)])
        self.assignments = [Assignment('a', 0, 64), Assignment('b', 0, 1518)]

    def test_sizes_rings_and_publishes_once(self):
        ports = FakePorts([ovs.NicPort('dpdk0', 0)])
        meta = FakeMetadata()
        sizer = dma.DmaSizer(self.conf, ports=ports, server_metadata=meta)
        budgets = sizer(self.topology, self.assignments)
        self.assertEqual({'dpdk0': budgets[0].descriptors}, ports.rings)
        self.assertEqual({'a', 'b'}, set(ports.budgets))
        self.assertEqual(['a', 'b'], [b.instance_uuid for b in meta.calls])
        sizer(self.topology, self.assignments)
        self.assertEqual(2, len(meta.calls))   # unchanged: not re-sent
        # A third instance changes everyone's share.
        sizer(self.topology, self.assignments + [Assignment('c', 0, 64)])
        self.assertEqual(5, len(meta.calls))
        self.assertEqual(1, len(sizer.status()))

    def test_ovs_down_still_publishes_and_does_not_raise(self):
        meta = FakeMetadata()
        sizer = dma.DmaSizer(self.conf, ports=FakePorts(down=True),
                             server_metadata=meta)
        sizer(self.topology, self.assignments)
        self.assertEqual(2, len(meta.calls))
        self.assertIn('unix:/x is unreachable', self.logs.output)

    def test_ovs_down_is_said_once_per_outage(self):
        ports = FakePorts(ports=[], down=True)
        sizer = dma.DmaSizer(self.conf, ports=ports,
                             server_metadata=FakeMetadata())
        for _ in range(3):
            sizer(self.topology, self.assignments)
        self.assertEqual(1, self.logs.output.count('is unreachable'))
        # Said once, not repeated as the exception's own text.
        self.assertNotIn('OvsUnavailable', self.logs.output)
        self.assertEqual({}, ports.rings)
        ports.down = False
        sizer(self.topology, self.assignments)
        self.assertIn('unix:/x answers again', self.logs.output)
        ports.down = True
        sizer(self.topology, self.assignments)
        self.assertEqual(2, self.logs.output.count('is unreachable'))

    def test_nova_down_logs_once_and_retries(self):
        meta = FakeMetadata(metadata.NovaUnavailable(reason='refused'))
        sizer = dma.DmaSizer(self.conf, ports=FakePorts(),
                             server_metadata=meta)
        sizer(self.topology, self.assignments)
        sizer(self.topology, self.assignments)
        # One attempt per apply (it stops at the first), retried each time.
        self.assertEqual(2, len(meta.calls))
        self.assertEqual(1, self.logs.output.count('refused'))
        meta.error = None
        sizer(self.topology, self.assignments)
        self.assertEqual(4, len(meta.calls))

    def test_no_credentials_is_a_clear_warning(self):
        sizer = dma.DmaSizer(self.conf, ports=FakePorts())
        self.assertEqual(1, len(sizer(self.topology, self.assignments)))
        self.assertIn('[nova] auth_type is not set', self.logs.output)

    def test_disabled(self):
        self.flags('resq_agent', dma_sizing=False)
        ports = FakePorts([ovs.NicPort('dpdk0', 0)])
        sizer = dma.DmaSizer(self.conf, ports=ports,
                             server_metadata=FakeMetadata())
        self.assertEqual([], sizer(self.topology, self.assignments))
        self.assertEqual({}, ports.rings)

    def test_unexpected_error_is_logged_not_raised(self):
        ports = FakePorts([ovs.NicPort('dpdk0', 0)])
        ports.set_rings = None   # calling it raises TypeError
        sizer = dma.DmaSizer(self.conf, ports=ports,
                             server_metadata=FakeMetadata())
        self.assertEqual([], sizer(self.topology, self.assignments))
        self.assertIn('DMA buffer sizing failed', self.logs.output)
