#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
#    WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
#    License for the specific language governing permissions and limitations
#    under the License.

import json
import os

import fixtures
from pqos import error

from resq_agent import layout
from resq_agent import pqos
import resq_agent.privsep.pqos
from resq_common import cbm
from tests import base
from tests.fixtures import pqos as pqos_fixture

U1 = '11111111-1111-1111-1111-111111111111'
U2 = '22222222-2222-2222-2222-222222222222'
U3 = '33333333-3333-3333-3333-333333333333'
FULL = 0xfffff
SHAPES = [layout.DomainShape(0, FULL, 1, 0xc0000, 1, default_io=True),
          layout.DomainShape(1, FULL, 1, 0xc0000, 1, default_io=True)]


def lay(*reqs, current=None, num_closids=16):
    current = current or {}
    return layout.compute(SHAPES, [
        layout.Request(u, d, w, cpus=c,
                       current_mask=(current.get(u) or {}).get(d))
        for u, d, w, c in reqs], num_closids)


class PqosEnforcerTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.state_dir = os.path.join(self.tmp, 'state')
        self.lib = self.use_lib(pqos_fixture.FakeLibpqos())
        self.enf = pqos.PqosEnforcer('OS', self.state_dir)

    def use_lib(self, lib):
        self.useFixture(pqos_fixture.FakePqos(lib))
        return lib

    def state(self):
        with open(os.path.join(self.state_dir, pqos.STATE_FILE)) as f:
            return json.load(f)['classes']

    def test_apply_on_two_l3_ids(self):
        steps = []
        result = self.enf.apply(lay((U1, 0, 4, (1, 2)), (U2, 1, 6, (5,))),
                                [0, 1], steps)
        self.assertEqual([], result.errors)
        self.assertEqual('OS', self.lib.interface)
        self.assertEqual({U1: 1, U2: 2}, self.state())
        # Each instance's class has its ways in its own L3, the default's
        # (shrunk) mask in the other; class 0 keeps the unowned ways.
        self.assertEqual((0xf, 0xfffc0), (self.lib.mask(0, 1),
                                          self.lib.mask(1, 1)))
        self.assertEqual((0xffff0, 0x3f), (self.lib.mask(0, 2),
                                           self.lib.mask(1, 2)))
        self.assertEqual((0xffff0, 0xfffc0), (self.lib.mask(0, 0),
                                              self.lib.mask(1, 0)))
        self.assertEqual([1, 2], self.lib.cores_in(1))
        self.assertEqual([5], self.lib.cores_in(2))
        self.assertEqual([0, 3, 4, 6, 7], self.lib.cores_in(0))
        # class 0 shrinks before any instance gets its ways.
        self.assertEqual('class 0 L3 0 shrink', steps[0])
        self.assertEqual(['resq-' + U1, 'resq-' + U2], result.written)
        self.assertEqual({U1: {0: 0xf, 1: 0xfffc0},
                          U2: {0: 0xffff0, 1: 0x3f}},
                         self.enf.current_masks())
        self.assertEqual((1, 2), self.enf.groups()['resq-' + U1].cpus)
        self.assertEqual({0: 0xffff0, 1: 0xfffc0}, self.enf.default_masks())
        # Idempotent: the same layout again writes nothing.
        writes = self.lib.writes
        steps = []
        self.enf.apply(lay((U1, 0, 4, (1, 2)), (U2, 1, 6, (5,)),
                           current=self.enf.current_masks()), [0, 1], steps)
        self.assertEqual([], steps)
        self.assertEqual(writes, self.lib.writes)

    def test_removed_instance_frees_its_class(self):
        self.enf.apply(lay((U1, 0, 4, (1, 2)), (U2, 0, 3, (3,))), [0, 1])
        steps = []
        result = self.enf.apply(lay((U2, 0, 3, (3,)),
                                    current=self.enf.current_masks()),
                                [0, 1], steps)
        self.assertEqual([], result.errors)
        self.assertEqual(['resq-' + U1], result.removed)
        self.assertEqual({U2: 2}, self.state())
        self.assertEqual([0, 1, 2, 4, 5, 6, 7], self.lib.cores_in(0))
        self.assertEqual((FULL, FULL), (self.lib.mask(0, 1),
                                        self.lib.mask(1, 1)))
        self.assertEqual('release ' + U1, steps[0])
        # The freed class goes to the next new instance.
        self.enf.apply(lay((U2, 0, 3, (3,)), (U3, 1, 2, (6,)),
                           current=self.enf.current_masks()), [0, 1])
        self.assertEqual({U2: 2, U3: 1}, self.state())
        self.assertEqual([6], self.lib.cores_in(1))
        # Nothing left: every class full, every core in class 0.
        self.enf.apply(lay(), [0, 1])
        self.assertEqual({}, self.state())
        self.assertEqual(sorted(self.lib.assoc), self.lib.cores_in(0))
        self.assertEqual({FULL}, {self.lib.mask(d, c) for d in (0, 1)
                                  for c in range(4)})

    def test_restart_keeps_classes(self):
        self.enf.apply(lay((U1, 0, 4, (1,)), (U2, 1, 4, (5,))), [0, 1])
        masks = self.enf.current_masks()
        again = pqos.PqosEnforcer('OS', self.state_dir)
        self.assertEqual(masks, again.current_masks())
        self.assertEqual({0: 0xffff0, 1: 0xffff0}, again.default_masks())
        # U1 goes, U3 comes: U2 keeps class 2, its mask and its cores.
        result = again.apply(lay((U2, 1, 4, (5,)), (U3, 0, 2, (2,)),
                                 current=again.current_masks()), [0, 1])
        self.assertEqual([], result.errors)
        self.assertEqual({U2: 2, U3: 1}, self.state())
        self.assertEqual(0xf, self.lib.mask(1, 2))
        self.assertEqual([5], self.lib.cores_in(2))
        self.assertEqual([2], self.lib.cores_in(1))

    def test_over_the_class_limit_is_refused(self):
        # class 0 and two instance classes
        self.lib = self.use_lib(pqos_fixture.FakeLibpqos(num_classes=3))
        enf = pqos.PqosEnforcer('MSR', self.state_dir)
        result = enf.apply(lay((U1, 0, 2, (1,)), (U2, 0, 2, (2,)),
                               (U3, 1, 2, (5,))), [0, 1])
        self.assertEqual(1, len(result.errors))
        self.assertIn('give instance %s a class of service: none left: '
                      'libpqos reports 3 classes' % U3, result.errors[0])
        self.assertEqual({U1: 1, U2: 2}, self.state())
        self.assertEqual(0, self.lib.assoc[5])
        self.assertEqual([1], self.lib.cores_in(1))

    def test_non_contiguous_mask_is_refused(self):
        bad = layout.Layout([
            layout.Assignment(U1, 0, 3, 0b1011, (1,)),
            layout.Assignment(U2, 0, 2, 0b110000, (2,))],
            [], {0: 0xfffc0, 1: FULL})
        result = self.enf.apply(bad, [0, 1])
        self.assertEqual(1, len(result.errors))
        self.assertIn('mask b is not contiguous', result.errors[0])
        self.assertEqual(0, self.lib.assoc[1])
        self.assertEqual(FULL, self.lib.mask(0, 1))
        self.assertEqual(0b110000, self.lib.mask(0, 2))
        self.assertEqual([2], self.lib.cores_in(2))
        # The privileged side refuses it too, and bad ids.
        set_class = resq_agent.privsep.pqos.set_l3_class
        self.assertRaises(cbm.InvalidMask, set_class, 'OS', 0, 1, 0b101)
        self.assertRaises(cbm.InvalidMask, set_class, 'OS', 0, 1, 1 << 20)
        exc = self.assertRaises(ValueError, set_class, 'OS', 0, 4, 0xf)
        self.assertIn('class of service 4 does not exist: the platform has '
                      '4 (0-3)', str(exc))
        self.assertRaises(ValueError, set_class, 'OS', -1, 1, 0xf)
        self.assertRaises(ValueError, set_class, '/dev/cpu', 0, 1, 0xf)
        self.assertRaises(ValueError, resq_agent.privsep.pqos.associate_cores,
                          'OS', [1, -2], 1)

    def test_cdp_sets_code_and_data(self):
        lib = self.use_lib(pqos_fixture.FakeLibpqos(cdp=True))
        enf = pqos.PqosEnforcer('OS', os.path.join(self.tmp, 'cdp'))
        enf.apply(lay((U1, 0, 5, (3,))), [0, 1])
        self.assertEqual((0x1f, 0x1f), lib.classes[0][1])
        self.assertEqual({0: 0x1f, 1: FULL}, enf.current_masks()[U1])

    def test_stray_cores_go_back_to_class_0(self):
        self.lib.assoc[6] = 3       # left by another tool or a lost state
        self.enf.apply(lay((U1, 0, 2, (1,))), [0, 1])
        self.assertEqual([], self.lib.cores_in(3))
        self.assertEqual([1], self.lib.cores_in(1))

    def test_unreadable_state_is_a_clear_error(self):
        os.makedirs(self.state_dir)
        with open(os.path.join(self.state_dir, pqos.STATE_FILE), 'w') as f:
            f.write('{not json')
        result = self.enf.apply(lay((U1, 0, 2, (1,))), [0, 1])
        self.assertIn('remove it to let the agent give classes of service '
                      'afresh', result.errors[0])
        self.assertEqual(0, self.lib.writes)

    def test_libpqos_error_leaves_others_enforced(self):
        real_set = self.lib.module.PqosAlloc.assoc_set

        def flaky(alloc, core, class_id):
            if core == 1:
                raise error.PqosErrorResource('core 1 busy')
            return real_set(alloc, core, class_id)

        self.lib.module.PqosAlloc.assoc_set = flaky
        result = self.enf.apply(lay((U1, 0, 2, (1,)), (U2, 1, 2, (5,))),
                                [0, 1])
        self.assertEqual(1, len(result.errors))
        self.assertIn('associate cores [1] with class 1: core 1 busy',
                      result.errors[0])
        self.assertEqual([5], self.lib.cores_in(2))

    def test_crash_between_any_two_writes_converges(self):
        before = lay((U1, 0, 4, (1, 2)), (U2, 1, 6, (5,)))

        def after(enf):
            return lay((U2, 1, 6, (5,)), (U3, 0, 8, (3,)),
                       current=enf.current_masks())

        # What a pass without a crash ends with.
        ref = pqos_fixture.FakeLibpqos()
        self.use_lib(ref)
        ref_dir = os.path.join(self.tmp, 'ref')
        pqos.PqosEnforcer('OS', ref_dir).apply(before, [0, 1])
        start = ref.writes
        enf = pqos.PqosEnforcer('OS', ref_dir)
        enf.apply(after(enf), [0, 1])
        total = ref.writes - start
        self.assertGreater(total, 3)
        for n in range(1, total + 1):
            lib = self.use_lib(pqos_fixture.FakeLibpqos())
            state_dir = os.path.join(self.tmp, 'crash%d' % n)
            pqos.PqosEnforcer('OS', state_dir).apply(before, [0, 1])
            lib.crash_at = lib.writes + n
            enf = pqos.PqosEnforcer('OS', state_dir)
            self.assertRaises(pqos_fixture.Crash, enf.apply, after(enf),
                              [0, 1])
            lib.crash_at = None
            enf = pqos.PqosEnforcer('OS', state_dir)
            result = enf.apply(after(enf), [0, 1])
            self.assertEqual([], result.errors)
            self.assertEqual(ref.snapshot(), lib.snapshot(),
                             'crash at write %d' % n)


class LoadBackendTest(base.TestCase):

    def test_pqos_backend_when_the_library_works(self):
        lib = pqos_fixture.FakeLibpqos()
        self.useFixture(pqos_fixture.FakePqos(lib))
        logs = self.useFixture(fixtures.FakeLogger())
        self.flags('resq_agent', backend='pqos', pqos_interface='OS',
                   state_dir=self.useFixture(fixtures.TempDir()).path)
        backend = pqos.load_backend(self.conf)
        self.assertIsInstance(backend, pqos.PqosEnforcer)
        self.assertEqual('pqos', backend.name)
        self.assertEqual('OS', lib.interface)
        self.assertIn('4 L3 classes of service', logs.output)

    def test_init_failure_falls_back_to_resctrl(self):
        lib = pqos_fixture.FakeLibpqos()
        lib.init_error = error.PqosErrorInit('pqos_init failed: 1')
        self.useFixture(pqos_fixture.FakePqos(lib))
        logs = self.useFixture(fixtures.FakeLogger())
        self.flags('resq_agent', backend='pqos')
        self.assertEqual('resctrl', pqos.load_backend(self.conf).name)
        self.assertIn('libpqos failed to initialise on its OS interface: '
                      'pqos_init failed: 1. Falling back to the resctrl '
                      'backend', logs.output)
