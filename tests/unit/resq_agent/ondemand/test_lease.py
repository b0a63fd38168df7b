from resq_agent import layout
from resq_agent.ondemand import lease
from resq_common import cbm
from tests import base


def assign(shape, start, ways, uuid='a'):
    return layout.Assignment(uuid, shape.id, ways,
                             shape.mask_at(start, ways))


class LeaseTest(base.TestCase):

    def test_io_ways_on_top(self):
        # 20 ways, DDIO 18-19, 1 default way, 6 leased: instances 0-10.
        s = layout.DomainShape(0, 0xfffff, 1, 0xc0000, 1, lease_ways=6)
        self.assertEqual(11, s.capacity)
        le = lease.lease_of(s, [assign(s, 0, 4)], 4, True, 1)
        self.assertEqual(cbm.make(4, 13), le.mask)
        le = lease.lease_of(s, [assign(s, 0, 4)], 4, False, 1)
        self.assertEqual(cbm.make(11, 6), le.mask)
        # The default group keeps its way next to DDIO, out of the lease.
        self.assertEqual(cbm.make(17, 1),
                         lease.default_mask(s, [assign(s, 0, 4)], True))

    def test_io_ways_at_the_bottom(self):
        # DDIO in ways 0-1: instances are packed down from way 19.
        s = layout.DomainShape(0, 0xfffff, 1, 0x3, 1, lease_ways=5)
        le = lease.lease_of(s, [assign(s, 0, 3)], 2, True, 1)
        self.assertEqual(cbm.make(3, 14), le.mask)
        self.assertEqual(0, le.mask & s.mask_at(0, 3))
        self.assertEqual(cbm.make(2, 1),
                         lease.default_mask(s, [assign(s, 0, 3)], True))

    def test_no_lease(self):
        s = layout.DomainShape(0, 0xfffff, 1, 0xc0000, 1)
        self.assertIsNone(lease.lease_of(s, [], 4, True, 1))
        # A lease larger than the region leaves only what there is.
        big = layout.DomainShape(0, 0xff, 1, 0xc0, 1, lease_ways=50)
        self.assertEqual(0, big.capacity)
        self.assertEqual(5, lease.lease_of(big, [], 4, True, 1).ways)
