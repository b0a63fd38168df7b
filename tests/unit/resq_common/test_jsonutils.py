from resq_common import jsonutils
from tests import base


class JsonutilsTest(base.TestCase):

    def test_depth_skips_strings(self):
        self.assertEqual(0, jsonutils.depth('1'))
        self.assertEqual(2, jsonutils.depth('{"a": [1, "[[[{{"]}'))
        self.assertEqual(1, jsonutils.depth(r'["\"[[[", "\\"]'))

    def test_loads_bounds_nesting(self):
        self.assertEqual({'a': [[1]]}, jsonutils.loads('{"a": [[1]]}'))
        exc = self.assertRaises(jsonutils.TooDeep, jsonutils.loads,
                                '[' * 50000 + ']' * 50000)
        self.assertIn('nested 50000 levels deep', str(exc))
        self.assertRaises(ValueError, jsonutils.loads, '[[[1]]]',
                          max_depth=2)
        self.assertRaises(ValueError, jsonutils.loads, '{"a": ')
