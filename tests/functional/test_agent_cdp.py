"""Code and data prioritization: a flavor's code ways on a cdp host.

The agent against a real Placement (in-process), libvirt's test driver
and the fake resctrl kernel mounted with cdp (issue 46 item 2): the
group's ways in its domain are split, its code ways on ``L3CODE`` and the
rest on ``L3DATA``, in one write; a host without cdp enforces the ways
and says why the split cannot be had.
"""

import resq_agent.privsep.resctrl as privileged
from tests.fixtures import resctrl as resctrl_fixture
from tests.functional import test_agent_mba

A = test_agent_mba.A
B = test_agent_mba.B
CODE = {'resq:code_ways': '1'}


class AgentCdpTest(test_agent_mba.AgentHostBase):

    def test_code_ways_split_the_groups_mask(self):
        mgr = self.host(cdp=True)
        self.doms.add(A, (1, 2), extra_specs=CODE)
        self.doms.add(B, (9,))
        self.allocate(A, 0, 4)
        self.allocate(B, 1, 2)
        self.assertEqual([], mgr.reconcile()['errors'])
        sch = self.schemata(A)
        code, data = sch['L3CODE'][0], sch['L3DATA'][0]
        self.assertEqual((1, 3), (bin(code).count('1'),
                                  bin(data).count('1')))
        self.assertEqual(0, code & data)
        # B shares A's class in domain 1 and asked for no split.
        self.assertEqual(sch['L3CODE'][1], sch['L3DATA'][1])
        # Someone joins them: the next reconcile splits them again.
        group = resctrl_fixture.instance_group(self.tree.root, A,
                                               self.doms.cpus[A])
        privileged.write_l3_masks(group, {0: code | data,
                                          1: sch['L3DATA'][1]})
        self.assertEqual([], mgr.reconcile()['errors'])
        again = self.schemata(A)
        self.assertEqual((code, data), (again['L3CODE'][0],
                                        again['L3DATA'][0]))

    def test_no_cdp_enforces_the_ways_and_says_why_once(self):
        mgr = self.host()
        self.doms.add(A, (1, 2), extra_specs=CODE)
        self.allocate(A, 0, 4)
        mgr.reconcile()
        mgr.reconcile()
        self.assertEqual(4, bin(self.schemata(A)['L3'][0]).count('1'))
        said = [line for line in self.logs.output.splitlines()
                if 'for code, which cannot be enforced' in line]
        self.assertEqual(1, len(said), said)
        self.assertIn('not mounted with cdp', said[0])
