"""On-demand classes through the libpqos backend (fake libpqos)."""

import os

from resq_agent import layout
from resq_agent.ondemand import host
from resq_agent import pqos
from tests import base
from tests.fixtures import pqos as pqos_fixture
from tests.unit.resq_agent import test_pqos

U1 = test_pqos.U1


class PqosOnDemandTest(base.TestCase):

    def test_class_assignments_get_classes_of_service(self):
        lib = pqos_fixture.FakeLibpqos()
        self.useFixture(pqos_fixture.FakePqos(lib))
        enf = pqos.PqosEnforcer('OS', os.path.join(self.tmp, 'state'))
        lay = test_pqos.lay((U1, 0, 4, (1, 2)))
        cid = host.class_id(0, 0)
        defaults = dict(lay.default_masks)
        defaults[0] = 0xfc000
        both = layout.Layout(
            lay.assignments + [layout.Assignment(cid, 0, 6, 0x3f0, (3, 4))],
            [], defaults)
        result = enf.apply(both, [0, 1])
        self.assertEqual([], result.errors)
        masks = enf.current_masks()
        self.assertEqual(0x3f0, masks[cid][0])
        self.assertEqual(0xf, masks[U1][0])
        # The class's cores are in its class of service.
        classes = enf.groups()
        self.assertEqual((3, 4), classes['resq-' + cid].cpus)
        # Gone from the layout: its class is released.
        result = enf.apply(lay, [0, 1])
        self.assertEqual(['resq-' + cid], result.removed)
