from resq_common import cbm
from tests import base


class CbmTest(base.TestCase):

    def test_make_and_format(self):
        self.assertEqual('f', cbm.fmt(cbm.make(0, 4)))
        self.assertEqual('ff0', cbm.fmt(cbm.make(4, 8)))
        self.assertEqual(0xfffff, cbm.parse('fffff\n'))
        self.assertEqual(0x30, cbm.parse('0x30'))

    def test_contiguity(self):
        self.assertTrue(cbm.is_contiguous(0b0111000))
        self.assertFalse(cbm.is_contiguous(0b0101000))
        self.assertFalse(cbm.is_contiguous(0))
        self.assertEqual(3, cbm.bits(0b0111000))

    def test_validate_names_the_rule(self):
        exc = self.assertRaises(cbm.InvalidMask, cbm.validate, 0b101,
                                0xfffff)
        self.assertIn('not contiguous', str(exc))
        exc = self.assertRaises(cbm.InvalidMask, cbm.validate, 0x100000,
                                0xfffff)
        self.assertIn('outside the cache', str(exc))
        exc = self.assertRaises(cbm.InvalidMask, cbm.validate, 0x1,
                                0xfffff, 2)
        self.assertIn('min_cbm_bits 2', str(exc))
        self.assertEqual(0x3, cbm.validate(0x3, 0xfffff, 2))

    def test_bad_input(self):
        self.assertRaises(cbm.InvalidMask, cbm.parse, 'xyz')
        self.assertRaises(cbm.InvalidMask, cbm.make, 0, 0)
        self.assertRaises(cbm.InvalidMask, cbm.make, -1, 2)
