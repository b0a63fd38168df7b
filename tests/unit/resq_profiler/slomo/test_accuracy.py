"""SLOMO's accuracy inside classes, measured against the testbed."""

from resq_profiler import exception
from resq_profiler.slomo import accuracy
from tests import base

MIXES = [('LPM', 'Stats'), ('Firewall', 'LPM', 'MazuNAT'),
         ('Stats', 'Stats', 'Firewall')]


class ClassErrorTest(base.TestCase):

    def test_measures_every_class_size_and_the_io_mixes(self):
        models = accuracy.Models(noise_pct=0.5, seed=0, runs=120)
        doc = accuracy.class_error(ways=(2, 20), mixes=MIXES, models=models)
        self.assertEqual(['2', '20'], sorted(doc['ways']))
        self.assertEqual(3, doc['mixes'])
        for ways, summary in doc['ways'].items():
            self.assertEqual(8, summary['instances'])
            self.assertEqual(summary['mean_abs_pct'],
                             doc['class_error_pct'][ways])
            self.assertLessEqual(abs(summary['bias_pct']),
                                 summary['mean_abs_pct'])
            self.assertLessEqual(summary['mean_abs_pct'],
                                 summary['max_abs_pct'])
            self.assertEqual(summary['max_abs_pct'],
                             abs(summary['worst']['error_pct']))
            self.assertIn(summary['worst']['nf'],
                          summary['worst']['mix'])
            self.assertLess(summary['mean_abs_pct'], 8.0, ways)
        # Asked about the whole LLC, the models are optimistic in two
        # ways, and far more wrong than asked about the class.
        two = doc['ways']['2']
        self.assertGreater(two['whole_llc_bias_pct'], 10.0)
        self.assertGreater(two['whole_llc_bias_pct'],
                           3 * two['mean_abs_pct'])
        self.assertEqual(doc['ways']['20']['bias_pct'],
                         doc['ways']['20']['whole_llc_bias_pct'])
        # The I/O-heavy mixes: the competitors at 1518 B are named.
        io = doc['io']
        self.assertEqual(io['mean_abs_pct'], doc['io_error_pct'])
        self.assertGreater(io['instances'], 0)
        self.assertTrue(any(n.endswith('@1518B')
                            for n in io['worst']['mix']))
        self.assertLess(io['mean_abs_pct'], 10.0)
        # The same models again: the same figures (nothing re-measured).
        self.assertEqual(doc, accuracy.class_error(
            ways=(2, 20), mixes=MIXES, models=models))
        # What the documentation's :num: roles read.
        figures = accuracy.doc_figures(doc)
        self.assertEqual(doc['class_error_pct'], figures['class_error_pct'])
        self.assertEqual(two['max_abs_pct'],
                         figures['class_max_error_pct']['2'])
        self.assertEqual(two['whole_llc_bias_pct'],
                         figures['whole_llc_bias_pct']['2'])
        self.assertEqual(io['max_abs_pct'], figures['io_max_error_pct'])
        self.assertEqual(doc['io_error_pct'], figures['io_error_pct'])

    def test_mixes_are_seeded(self):
        a = accuracy.mixes(10, seed=3)
        self.assertEqual(a, accuracy.mixes(10, seed=3))
        self.assertNotEqual(a, accuracy.mixes(10, seed=4))
        for mix in a:
            self.assertTrue(2 <= len(mix) <= 5)
        for mine, heavy in accuracy.io_mixes(10, names=['LPM', 'Stats']):
            self.assertLessEqual(set(mine) | set(heavy), {'LPM', 'Stats'})
            self.assertTrue(1 <= len(heavy) <= 2)

    def test_bad_input(self):
        for ways in ((), (0,), (21,), (2.5,), ('4',)):
            exc = self.assertRaises(ValueError, accuracy.class_error,
                                    ways=ways, mixes=MIXES, io=False)
            self.assertIn('class size', str(exc))
        self.assertRaises(exception.UnknownNF, accuracy.class_error,
                          ways=(4,),
                          mixes=[('NoSuchNF',)], io=False)
        exc = self.assertRaises(ValueError, accuracy.class_error,
                                ways=(4,), mixes=[()], io=False)
        self.assertIn('at least one NF', str(exc))
        self.assertRaises(ValueError, accuracy.Models, noise_pct=-1)
