import os

import fixtures

from resq_agent.ondemand import model
from resq_agent.ondemand import sharing
from resq_profiler.slomo import store as store_mod
from tests import base
from tests.unit.resq_profiler.slomo import util


def nf(uuid, profile):
    return model.NF(uuid, 50.0, (1,), profile)


class SlomoSharingTest(base.TestCase):
    """The agent's sharing check on models trained on the testbed."""

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        store = store_mod.ModelStore(self.dir)
        self.models = {}
        for name in ('LPM', 'Stats', 'Firewall'):
            doc = util.trained_doc(name)
            store.put(doc)
            self.models[name] = doc['nf']['profile_id']
        self.check = sharing.SlomoSharing(self.dir)
        self.logs = self.useFixture(fixtures.FakeLogger())

    def test_flags_the_nf_that_cannot_carry_its_rate(self):
        lpm = self.check.model(self.models['LPM'])
        others = [nf('s%d' % i, self.models['Stats']) for i in range(3)]
        alone = lpm.predict_mpps([self.check.model(self.models['Stats'])
                                  .contentiousness] * 3)
        nfs = [nf('lpm', self.models['LPM'])] + others
        # Offered a little more than predicted next to three Stats: out.
        readings = {n.uuid: model.Reading(60, mpps=0.01) for n in others}
        readings['lpm'] = model.Reading(60, mpps=alone * 1.05)
        self.assertEqual({'lpm'}, self.check(nfs, readings))
        self.assertIn('SLOMO predicts', self.logs.output)
        # A little less: it may share.
        readings['lpm'] = model.Reading(60, mpps=alone * 0.95)
        self.assertEqual(set(), self.check(nfs, readings))
        # No rate reported: not judged.
        readings['lpm'] = model.Reading(60)
        self.assertEqual(set(), self.check(nfs, readings))

    def test_no_model_or_a_bad_one_judges_nobody(self):
        readings = {'a': model.Reading(60, mpps=100.0),
                    'b': model.Reading(60, mpps=100.0)}
        nfs = [nf('a', self.models['LPM']), nf('b', None)]
        self.assertEqual(set(), self.check(nfs, readings))
        # A corrupt model file is refused with its name, as if none.
        path = os.path.join(self.dir, self.models['Firewall'] + '.slomo')
        with open(path, 'w') as f:
            f.write('{not json')
        nfs = [nf('a', self.models['LPM']), nf('b', self.models['Firewall'])]
        self.assertEqual(set(), self.check(nfs, readings))
        self.assertIn(path, self.logs.output)

    def test_predicts_for_the_class_the_sharers_get(self):
        lpm = self.check.model(self.models['LPM'])
        stats = self.check.model(self.models['Stats']).contentiousness
        way = lpm.platform['way_size_bytes']
        nfs = [nf('lpm', self.models['LPM']), nf('st', self.models['Stats'])]
        in2, whole = lpm.predict_mpps([stats], 2), lpm.predict_mpps([stats])
        self.assertLess(in2, 0.9 * whole)
        rate = (in2 + whole) / 2
        # On the whole LLC LPM keeps up: nothing measured their occupancy.
        readings = {'lpm': model.Reading(60, mpps=rate),
                    'st': model.Reading(60, mpps=0.01)}
        self.assertEqual(set(), self.check(nfs, readings))
        # Confined to 2 ways it cannot, whether the caller says so...
        self.assertEqual({'lpm'}, self.check(nfs, readings, ways=2))
        self.assertIn('in 2 ways', self.logs.output)
        # ...or their occupancy fills 2 ways (the class max-min gives them).
        readings = {'lpm': model.Reading(60, occupancy_bytes=1.2 * way,
                                         mpps=rate),
                    'st': model.Reading(60, occupancy_bytes=0.9 * way,
                                        mpps=0.01)}
        self.assertEqual(2, self.check.class_ways(nfs, readings, {
            n.uuid: lpm for n in nfs}))
        self.assertEqual({'lpm'}, self.check(nfs, readings))
        self.assertEqual(set(), self.check(nfs, readings, ways=20))

    def test_whole_llc_models_judge_nobody_in_a_class(self):
        from resq_profiler.slomo import document
        from tests.unit.resq_profiler.slomo import test_classes
        old = test_classes.v1_doc('LPM')
        store_mod.ModelStore(self.dir).put(old)
        self.check.forget()
        nfs = [nf('lpm', self.models['LPM']), nf('st', self.models['Stats'])]
        readings = {'lpm': model.Reading(60, mpps=100.0),
                    'st': model.Reading(60, mpps=100.0)}
        self.assertEqual(1, self.check.model(self.models['LPM']).version)
        self.assertEqual(set(), self.check(nfs, readings, ways=4))
        self.assertEqual(set(), self.check(nfs, readings, ways=4))
        self.assertEqual(1, self.logs.output.count('format version 1'))
        self.assertIn('retrain', self.logs.output)
        # On the whole LLC it still judges.
        self.assertEqual({'lpm', 'st'}, self.check(nfs, readings, ways=20))
        self.assertIsInstance(self.check.model(self.models['LPM']),
                              document.Model)
