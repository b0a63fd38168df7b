"""The fake resctrl and sysfs trees devstack builds on hosts without RDT."""

import argparse
import contextlib
import io
import os

from resq_agent import discovery
from resq_fake import resctrl as fake_resctrl
from tests import base


class FakeResctrlTest(base.TestCase):

    def main(self, *args):
        self.resctrl = os.path.join(self.tmp, 'resctrl')
        self.sysfs = os.path.join(self.tmp, 'sysfs')
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err):
            rc = fake_resctrl.main(['--resctrl-root', self.resctrl,
                                    '--sysfs-root', self.sysfs]
                                   + list(args), out=out)
        return rc, out.getvalue(), err.getvalue()

    def test_two_domains_as_discovery_sees_them(self):
        rc, out, err = self.main('--cpus', '0-7', '--domains', '2',
                                 '--ways', '11', '--way-kib', '1024',
                                 '--num-closids', '8')
        self.assertEqual(0, rc, err)
        self.assertIn('2 cache domain(s) of 11 ways of 1024 KiB', out)
        topo = discovery.discover(self.resctrl, self.sysfs)
        self.assertTrue(topo.resctrl_available, topo.reason)
        self.assertEqual([(0, (0, 1, 2, 3)), (1, (4, 5, 6, 7))],
                         [(d.id, d.cpus) for d in topo.domains])
        for dom in topo.domains:
            self.assertEqual((11, 1024 * 1024, 8, 0x7ff),
                             (dom.ways, dom.way_size_bytes, dom.num_closids,
                              dom.cbm_mask))
        self.assertEqual('L3:0=7ff;1=7ff\n', self.read('schemata'))
        self.assertEqual('0-7\n', self.read('cpus_list'))
        self.assertEqual('1\n', self.read('tasks'))
        for name in ('llc_occupancy', 'mbm_total_bytes', 'mbm_local_bytes'):
            self.assertEqual('0\n', self.read('mon_data', 'mon_L3_01', name))

    def test_numa_memory_of_the_cells(self):
        rc, out, err = self.main('--cpus', '0-7', '--domains', '2',
                                 '--memory-mb', '4096', '--hugepages-mb',
                                 '2048')
        self.assertEqual(0, rc, err)
        self.assertIn('(4096 MB and 2048 MB of huge pages each)', out)
        topo = discovery.discover(self.resctrl, self.sysfs)
        self.assertEqual([(4096, 2048)] * 2,
                         [(d.memory_mb, d.hugepages_mb)
                          for d in topo.domains])
        rc, out, err = self.main('--cpus', '0-7', '--replace',
                                 '--hugepages-mb', '-2')
        self.assertEqual(2, rc)
        self.assertIn('--hugepages-mb must not be negative', err)

    def test_memory_bandwidth_allocation_as_discovery_sees_it(self):
        rc, out, err = self.main('--cpus', '0-3', '--mba', 'mbps')
        self.assertEqual(0, rc, err)
        topo = discovery.discover(self.resctrl, self.sysfs)
        self.assertEqual('mbps', topo.domains[0].mba_info.mode)
        self.assertIn('MB:0=4294967295', self.read('schemata'))
        rc, out, err = self.main('--cpus', '0-3', '--mba', 'percent',
                                 '--replace')
        self.assertEqual(0, rc, err)
        info = discovery.discover(self.resctrl, self.sysfs).mba_info
        self.assertEqual(('percent', 10, 10), (
            info.mode, info.min_bandwidth, info.bandwidth_gran))
        self.assertIn('MB:0=100', self.read('schemata'))
        self.main('--cpus', '0-3', '--replace')
        self.assertIsNone(
            discovery.discover(self.resctrl, self.sysfs).mba_info)

    def test_l2_clusters_as_discovery_sees_them(self):
        rc, out, err = self.main('--cpus', '0-7', '--l2', '2',
                                 '--memory-mb', '64', '--hugepages-mb', '0')
        self.assertEqual(0, rc, err)
        self.assertIn('L2 CAT, 8-way L2 caches shared by clusters of 2 CPUs',
                      out)
        self.assertIn('L2:0=ff;1=ff;2=ff;3=ff', self.read('schemata'))
        topo = discovery.discover(self.resctrl, self.sysfs)
        self.assertEqual([(0, (0, 1)), (1, (2, 3)), (2, (4, 5)),
                          (3, (6, 7))],
                         [(d.id, d.cpus) for d in topo.l2_domains])
        self.assertEqual({(8, 2 * 1024 ** 2, 256 * 1024, 0xff)},
                         {(d.ways, d.size_bytes, d.way_size_bytes,
                           d.usable_mask) for d in topo.l2_domains})
        self.assertEqual(3, topo.l2_share())
        # The L3 side is as without --l2.
        self.assertEqual([(0, tuple(range(8)))],
                         [(d.id, d.cpus) for d in topo.domains])
        self.main('--cpus', '0-7', '--replace')
        self.assertEqual((), discovery.discover(self.resctrl,
                                                self.sysfs).l2_domains)
        rc, out, err = self.main('--cpus', '0-7', '--replace', '--l2', '-1')
        self.assertEqual(2, rc)
        self.assertIn('--l2 must be a number of CPUs per L2 cluster', err)

    def test_fake_hosts_pass_the_l2_option_on(self):
        from resq_fake import host

        args = fake_resctrl.add_tree_options(argparse.ArgumentParser(
        )).parse_args(['--l2', '4', '--cpus', '0-7'])
        argv = host._tree_argv(args)
        self.assertEqual(['--l2', '4'], argv[-2:])
        self.assertEqual(4, fake_resctrl.add_tree_options(
            argparse.ArgumentParser()).parse_args(argv).l2)
        self.assertNotIn('--l2', host._tree_argv(
            fake_resctrl.add_tree_options(argparse.ArgumentParser(
            )).parse_args([])))
        self.assertEqual({0: (0, 1, 2), 1: (3, 4, 5), 2: (6,)},
                         fake_resctrl.l2_layout(range(7), 3))
        self.assertIsNone(fake_resctrl.l2_layout(range(7), 0))

    def read(self, *parts):
        with open(os.path.join(self.resctrl, *parts)) as f:
            return f.read()

    def test_existing_tree_is_kept_unless_replaced(self):
        self.assertEqual(0, self.main('--cpus', '0-1')[0])
        group = os.path.join(self.resctrl, 'resq-x')
        os.mkdir(group)
        rc, out, _ = self.main('--cpus', '0-1')
        self.assertEqual(0, rc)
        self.assertIn('already holds a resctrl tree; left as it is', out)
        self.assertTrue(os.path.isdir(group))
        self.assertEqual(0, self.main('--cpus', '0-1', '--replace')[0])
        self.assertFalse(os.path.exists(group))

    def test_bad_input_is_named(self):
        for args, message in (
                (('--ways', '0'), 'ways must be between 1 and 32, got 0'),
                (('--ways', '4', '--min-cbm-bits', '5'),
                 'min_cbm_bits must be between 1 and the 4 ways, got 5'),
                (('--num-closids', '0'), 'num_closids must be at least 1'),
                (('--cpus', '0-1', '--domains', '3'),
                 'cannot share 2 CPUs among 3 cache domains'),
                (('--cpus', 'zero'), "'zero' is not a CPU list"),
                (('--cpus', '3-1'), "'3-1' is not a CPU list"),
                (('--way-kib', '0'), '--way-kib must be at least 1')):
            rc, out, err = self.main(*args)
            self.assertEqual(2, rc, args)
            self.assertEqual('ERROR: %s' % message,
                             err.strip()[:len(message) + 7], args)
            self.assertFalse(os.path.exists(self.resctrl), args)

    def test_cpu_lists(self):
        self.assertEqual('0-2,5,7-8',
                         fake_resctrl.format_cpus([8, 0, 1, 2, 5, 7]))
        self.assertEqual([0, 1, 2, 3, 8], fake_resctrl.parse_cpus('0-3,8\n'))
        self.assertEqual({0: (0, 1, 2), 1: (3, 4)},
                         fake_resctrl.split_cpus(range(5), 2))


class FakeMonitoringLayoutTest(base.TestCase):

    def test_with_and_without_l3_monitoring(self):
        on = os.path.join(self.tmp, 'on')
        fake_resctrl.build_resctrl(on, domains=(0, 1), foreign=('app',),
                                   num_rmids=32)
        with open(os.path.join(on, 'info', 'L3_MON', 'num_rmids')) as f:
            self.assertEqual('32\n', f.read())
        for group in ('', 'app'):
            self.assertTrue(os.path.isdir(os.path.join(on, group,
                                                       'mon_groups')))
            self.assertTrue(os.path.isfile(os.path.join(
                on, group, 'mon_data', 'mon_L3_01', 'mbm_total_bytes')))
        off = os.path.join(self.tmp, 'off')
        fake_resctrl.build_resctrl(off, foreign=('app',), monitoring=False)
        self.assertFalse(os.path.exists(os.path.join(off, 'info', 'L3_MON')))
        for group in ('', 'app'):
            for name in ('mon_groups', 'mon_data'):
                self.assertFalse(os.path.exists(os.path.join(off, group,
                                                             name)))
        self.assertTrue(discovery.discover(off, self.tmp).domains)
