"""The soak's pure parts: its schedule, CPUs, checks and JSON line.

``benchmarks/cloud_soak.py`` and ``tests/cloud/faults.py`` run on the
all-in-one cloud; what they decide from what they read is tested here on
made-up inventories, without a cloud.
"""

import json
import os
import random

import fixtures

from benchmarks import cloud_soak
from resq_common import cache_domain
from tests import base
from tests.cloud import faults

NODE1 = '11111111-1111-4111-8111-111111111111'
NODE2 = '22222222-2222-4222-8222-222222222222'
S1 = 'aaaaaaaa-0000-4000-8000-000000000001'
S2 = 'aaaaaaaa-0000-4000-8000-000000000002'
GONE = 'dddddddd-0000-4000-8000-00000000dead'
MIG = 'eeeeeeee-0000-4000-8000-000000000001'
SPECS = {'resources_LLC:CUSTOM_LLC_WAY': '3', 'resq:slo': 'reserved',
         'hw:cpu_policy': 'dedicated'}


def inventory():
    """A cloud of two hosts; S1 (3 ways) partitioned on aio-1."""
    llc1 = cache_domain.provider_uuid(NODE1, 0)
    llc2 = cache_domain.provider_uuid(NODE2, 0)
    return {
        'servers': {S1: {'name': 'soak-00001', 'status': 'ACTIVE',
                         'task_state': None, 'host': 'aio-1',
                         'node': 'aio-1', 'flavor': 'resq.lpm.3w',
                         'specs': dict(SPECS)}},
        'providers': {
            NODE1: {'name': 'aio-1', 'parent': None, 'root': NODE1},
            llc1: {'name': 'aio-1_llc_0', 'parent': NODE1, 'root': NODE1},
            NODE2: {'name': 'aio-2', 'parent': None, 'root': NODE2},
            llc2: {'name': 'aio-2_llc_0', 'parent': NODE2, 'root': NODE2}},
        'compute_nodes': {NODE1: 'aio-1', NODE2: 'aio-2'},
        'allocations': {S1: {NODE1: {'PCPU': 1, 'MEMORY_MB': 64},
                             llc1: {'CUSTOM_LLC_WAY': 3,
                                    'CUSTOM_LLC_CLOS': 1}}},
        'migrations': {},
        'hosts': {
            'aio-1': {'groups': {'resq-cos1': {
                'l3': {0: 0x7}, 'cpus': [1],
                'mons': {'resq-' + S1: [1]}}},
                'default': {'l3': {0: 0x3fff8}, 'cpus': [0]},
                'domains': {S1: {'active': True, 'pinned': [1]}}},
            'aio-2': {'groups': {},
                      'default': {'l3': {0: 0x3ffff}, 'cpus': [0, 1]},
                      'domains': {}}},
        'plans_applying': [],
    }


class ScheduleTest(base.TestCase):

    def test_thirty_minutes_give_each_fault_three_times(self):
        plan = cloud_soak.fault_schedule(1800, seed=7)
        kinds = [k for _, k in plan]
        for kind in cloud_soak.FAULT_KINDS:
            self.assertEqual(3, kinds.count(kind), plan)
        times = [t for t, _ in plan]
        self.assertEqual(sorted(times), times)
        self.assertTrue(all(0 < t < 1800 for t in times), times)

    def test_seeded(self):
        self.assertEqual(cloud_soak.fault_schedule(1800, seed=3),
                         cloud_soak.fault_schedule(1800, seed=3))
        self.assertNotEqual(
            [k for _, k in cloud_soak.fault_schedule(3600, seed=3)],
            [k for _, k in cloud_soak.fault_schedule(3600, seed=4)])

    def test_short_soak_has_every_kind_once(self):
        plan = cloud_soak.fault_schedule(120, seed=1)
        self.assertEqual(sorted(cloud_soak.FAULT_KINDS),
                         sorted(k for _, k in plan))

    def test_no_kind_twice_in_a_row(self):
        for seed in range(50):
            kinds = [k for _, k in cloud_soak.fault_schedule(3600, seed)]
            for a, b in zip(kinds, kinds[1:]):
                self.assertNotEqual(a, b, (seed, kinds))


class ActionsTest(base.TestCase):

    def test_only_possible_actions(self):
        rng = random.Random(1)
        seen = {cloud_soak.choose_action(rng, {'delete': True,
                                               'reboot': True})
                for _ in range(200)}
        self.assertEqual({'delete', 'reboot'}, seen)
        self.assertIsNone(cloud_soak.choose_action(rng, {}))

    def test_all_actions_in_the_mix(self):
        rng = random.Random(2)
        every = dict.fromkeys(cloud_soak.ACTIONS, True)
        seen = {cloud_soak.choose_action(rng, every) for _ in range(500)}
        self.assertEqual(set(cloud_soak.ACTIONS), seen)


class SlotsTest(base.TestCase):

    def test_creates_keep_headroom(self):
        slots = cloud_soak.Slots({'aio-1': 1, 'aio-2': 2})
        self.assertEqual(2, slots.limit())
        self.assertTrue(slots.can_create())
        slots.placed['aio-2'] = 1
        self.assertTrue(slots.can_create())
        slots.anywhere = 1  # a create under way
        self.assertFalse(slots.can_create())

    def test_moves_need_a_free_cpu_even_if_creates_land_there(self):
        slots = cloud_soak.Slots({'aio-1': 1, 'aio-2': 2, 'aio-3': 2})
        slots.placed.update({'aio-1': 1, 'aio-2': 1, 'aio-3': 1})
        self.assertEqual(['aio-2', 'aio-3'], slots.move_targets('aio-1'))
        slots.anywhere = 1
        self.assertEqual([], slots.move_targets('aio-1'))
        slots.anywhere = 0
        slots.incoming['aio-2'] = 1
        self.assertEqual(['aio-3'], slots.move_targets('aio-1'))

    def test_resize_needs_room_on_another_host(self):
        slots = cloud_soak.Slots({'aio-1': 2, 'aio-2': 1})
        slots.placed.update({'aio-1': 1, 'aio-2': 1})
        self.assertFalse(slots.can_resize('aio-1'))
        self.assertTrue(slots.can_resize('aio-2'))


class HostRssTest(base.TestCase):

    def test_a_hosts_own_processes(self):
        rss = {'libvirtd@aio-1': 35.0, 'nova-compute-aio-1': 170.0,
               'resq-agent@aio-1': 110.0,
               'resq-privsep-resctrl@aio-1': 120.0,
               'resq-privsep-pqos@aio-1': 60.0,
               'resq-api@aio-1': 100.0, 'resq-optimizer@aio-1': 160.0,
               'libvirtd@aio-10': 1000.0, 'nova-api': 190.0}
        self.assertEqual({'aio-1': 512.0},
                         cloud_soak.host_rss(rss, ['aio-1'],
                                             {'aio-1': 17.0}))


class PartitionTest(base.TestCase):

    def test_partitioned(self):
        self.assertEqual({}, faults.partition_problems(inventory()))

    def test_mask_of_other_ways(self):
        inv = inventory()
        inv['hosts']['aio-1']['groups']['resq-cos1']['l3'][0] = 0x3
        inv['hosts']['aio-1']['default']['l3'][0] = 0x3fffc
        [problems] = faults.partition_problems(inv).values()
        self.assertIn('has 2 ways, Placement allocated 3', problems[0])

    def test_no_group(self):
        inv = inventory()
        inv['hosts']['aio-1']['groups'] = {}
        self.assertIn(S1, faults.partition_problems(inv))

    def test_flavor_and_allocation_disagree(self):
        inv = inventory()
        inv['servers'][S1]['specs'][
            'resources_LLC:CUSTOM_LLC_WAY'] = '4'
        [problems] = faults.partition_problems(inv).values()
        self.assertIn('asks for 4 ways, Placement allocated 3', problems[0])

    def test_shares_ways_with_default_group(self):
        inv = inventory()
        inv['hosts']['aio-1']['default']['l3'][0] = 0x3ffff
        [problems] = faults.partition_problems(inv).values()
        self.assertTrue(any('default group' in p for p in problems))

    def test_pinned_cpu_left_in_default_group(self):
        inv = inventory()
        inv['hosts']['aio-1']['default']['cpus'] = [0, 1]
        [problems] = faults.partition_problems(inv).values()
        self.assertTrue(any('still in the default' in p for p in problems))

    def test_busy_building_and_plain_servers_are_not_judged(self):
        inv = inventory()
        inv['hosts']['aio-1']['groups'] = {}
        self.assertEqual({}, faults.partition_problems(inv, skip={S1}))
        inv['servers'][S1]['status'] = 'BUILD'
        self.assertEqual({}, faults.partition_problems(inv))
        inv['servers'][S1].update(status='ACTIVE', specs={})
        self.assertEqual({}, faults.partition_problems(inv))

    def test_partitioned_twice(self):
        inv = inventory()
        self.assertEqual({}, faults.double_partitions(inv))
        inv['hosts']['aio-2']['groups']['resq-' + S1] = {
            'l3': {0: 0x7}, 'cpus': [1], 'mons': {}}
        self.assertEqual([('aio-1', 'resq-cos1', 'resq-' + S1),
                          ('aio-2', 'resq-' + S1, None)],
                         faults.double_partitions(inv)[S1])


class LeaksTest(base.TestCase):

    def counts(self, inv, skip=()):
        return faults.leak_counts(faults.leaks(inv, skip))

    def test_nothing_leaked(self):
        self.assertEqual({'groups': 0, 'allocations': 0, 'domains': 0,
                          'providers': 0, 'plans_applying': 0},
                         self.counts(inventory()))

    def test_group_of_a_server_gone(self):
        inv = inventory()
        del inv['servers'][S1]
        del inv['allocations'][S1]
        del inv['hosts']['aio-1']['domains'][S1]
        found = faults.leaks(inv)
        self.assertEqual(1, len(found['groups']), found)
        self.assertIn('names no server on aio-1', found['groups'][0])
        # Being deleted right now: not a leak yet.
        self.assertEqual(0, self.counts(inv, skip={S1})['groups'])

    def test_group_of_a_server_on_another_host(self):
        inv = inventory()
        inv['hosts']['aio-2']['groups']['resq-' + S1] = {
            'l3': {0: 0x7}, 'cpus': [1], 'mons': {}}
        self.assertEqual(1, self.counts(inv)['groups'])

    def test_class_without_member(self):
        inv = inventory()
        inv['hosts']['aio-2']['groups']['resq-cos3'] = {
            'l3': {0: 0x7}, 'cpus': [], 'mons': {}}
        self.assertEqual(1, self.counts(inv)['groups'])

    def test_groups_not_the_agents_kind_are_left_alone(self):
        inv = inventory()
        inv['hosts']['aio-2']['groups']['resq-od0-1'] = {
            'l3': {0: 0x7}, 'cpus': [], 'mons': {}}
        self.assertEqual(0, self.counts(inv)['groups'])

    def test_domain_of_no_server(self):
        inv = inventory()
        inv['hosts']['aio-2']['domains'][GONE] = {'active': True,
                                                  'pinned': [1]}
        self.assertEqual(1, self.counts(inv)['domains'])

    def test_allocations(self):
        inv = inventory()
        inv['allocations'][GONE] = {NODE2: {'PCPU': 1}}
        self.assertEqual(1, self.counts(inv)['allocations'])
        inv['allocations'][MIG] = {NODE2: {'PCPU': 1}}
        inv['migrations'][MIG] = 'running'
        self.assertEqual(1, self.counts(inv)['allocations'])
        inv['migrations'][MIG] = 'completed'
        self.assertEqual(2, self.counts(inv)['allocations'])

    def test_migration_of_a_skipped_server(self):
        inv = inventory()
        inv['allocations'][MIG] = {NODE2: {'PCPU': 1}}
        inv['migrations'][MIG] = 'error'
        inv['migration_servers'] = {MIG: S1}
        self.assertEqual(1, self.counts(inv)['allocations'])
        # S1 in ERROR (or being deleted): its migration is Nova's still.
        self.assertEqual(0, self.counts(inv, skip={S1})['allocations'])

    def test_server_holding_two_hosts(self):
        inv = inventory()
        inv['allocations'][S1][NODE2] = {'PCPU': 1}
        found = faults.leaks(inv)
        self.assertEqual(1, len(found['allocations']))
        self.assertIn('also holds allocations under aio-2',
                      found['allocations'][0])

    def test_provider_of_no_compute_node(self):
        inv = inventory()
        inv['providers'][GONE] = {'name': 'aio-9', 'parent': None,
                                  'root': GONE}
        self.assertEqual(1, self.counts(inv)['providers'])

    def test_plans(self):
        inv = inventory()
        inv['plans_applying'] = ['p1']
        self.assertEqual(1, self.counts(inv)['plans_applying'])
        inv['plans_applying'] = None  # resq-api did not answer
        self.assertIsNone(self.counts(inv)['plans_applying'])


class ErrorServerTest(base.TestCase):
    """A server Nova put in ERROR mid-migration is counted, not judged."""

    def soak(self, inv):
        soak = cloud_soak.Soak(None, None, type('O', (), {'seed': 1})())
        soak._inventory = lambda problems: inv
        soak._refresh = lambda inv: None
        return soak

    def abandoned(self):
        # S1 in ERROR on aio-1 (Nova's host); its guest also on aio-2,
        # paused, partitioned by the server's allocation there; the
        # migration's allocation on aio-1.
        inv = inventory()
        llc2 = cache_domain.provider_uuid(NODE2, 0)
        inv['servers'][S1]['status'] = 'ERROR'
        inv['allocations'][MIG] = inv['allocations'].pop(S1)
        inv['allocations'][S1] = {NODE2: {'PCPU': 1},
                                  llc2: {'CUSTOM_LLC_WAY': 3}}
        inv['hosts']['aio-2']['groups']['resq-cos1'] = {
            'l3': {0: 0x7}, 'cpus': [1], 'mons': {'resq-' + S1: [1]}}
        inv['hosts']['aio-2']['domains'][S1] = {
            'active': False, 'pinned': [1]}
        return inv

    def test_counted_and_named_not_judged(self):
        inv = self.abandoned()
        self.assertTrue(faults.double_partitions(inv))
        result = self.soak(inv).settle_check(0)
        self.assertEqual((1, {S1: 'aio-1'}),
                         (result['in_error'], result['in_error_detail']))
        self.assertEqual(0, result['doubles'])
        self.assertEqual(0, result['final_unpartitioned'])
        self.assertEqual(0, result['leaks']['groups'])
        self.assertEqual(0, result['leaks']['domains'])

    def test_once_deleted_what_it_left_is_a_leak(self):
        inv = self.abandoned()
        del inv['servers'][S1]
        result = self.soak(inv).settle_check(0)
        self.assertEqual(0, result['in_error'])
        self.assertGreater(result['leaks']['groups'], 0)
        self.assertGreater(result['leaks']['domains'], 0)
        self.assertGreater(result['leaks']['allocations'], 0)

    def test_summarized_beside_the_targets(self):
        checks = [{'in_error': 2, 'doubles': 0}, {'in_error': None}]
        figures = cloud_soak.summarize([], checks, {
            a: {'ok': 0, 'failed': 0, 'seconds': []}
            for a in cloud_soak.ACTIONS}, {})
        self.assertEqual(2, figures['servers_in_error_max'])


class NovaLeftoverTest(base.TestCase):
    """A domain Nova left on aio-2 of S1, which it placed on aio-1."""

    def left(self, partitioned):
        inv = inventory()
        inv['hosts']['aio-2']['domains'][S1] = {'active': True,
                                                'pinned': [1]}
        if partitioned:
            inv['hosts']['aio-2']['groups']['resq-cos1'] = {
                'l3': {0: 0x7}, 'cpus': [1], 'mons': {'resq-' + S1: [1]}}
        return inv

    def soak(self, inv, clock):
        soak = cloud_soak.Soak(None, None, type('O', (), {'seed': 1})())
        soak._inventory = lambda problems: inv
        soak._refresh = lambda inv: None
        self.useFixture(fixtures.MockPatch(
            'benchmarks.cloud_soak.time.monotonic', lambda: clock[0]))
        return soak

    def test_found_and_not_a_leaked_domain(self):
        inv = self.left(partitioned=False)
        self.assertEqual({('aio-2', S1)}, faults.nova_leftovers(inv))
        self.assertEqual(set(), faults.nova_leftovers(inv, skip={S1}))
        self.assertEqual(0, faults.leak_counts(faults.leaks(inv))['domains'])
        # A domain whose server is gone stays a leak.
        inv['hosts']['aio-2']['domains'][GONE] = {'active': True}
        self.assertEqual(1, faults.leak_counts(faults.leaks(inv))['domains'])

    def test_partition_allowed_while_young_judged_after(self):
        inv = self.left(partitioned=True)
        clock = [1000.0]
        soak = self.soak(inv, clock)
        first = soak.settle_check(0)
        self.assertEqual((1, 0, 0), (first['nova_leftovers'],
                                     first['doubles'],
                                     first['leaks']['groups']))
        self.assertIn('%s on aio-2 (Nova: aio-1)' % S1,
                      first['nova_leftover_detail'])
        clock[0] += faults.LEFTOVER_GRACE_S + 1
        late = soak.settle_check(0)
        self.assertEqual(1, late['doubles'])
        self.assertEqual(1, late['leaks']['groups'])
        # Left unpartitioned, as the agent does past its grace: counted,
        # not judged.
        del inv['hosts']['aio-2']['groups']['resq-cos1']
        done = soak.settle_check(0)
        self.assertEqual((1, 0, 0), (done['nova_leftovers'],
                                     done['doubles'],
                                     done['leaks']['groups']))
        figures = cloud_soak.summarize([], [first, late, done], {
            a: {'ok': 0, 'failed': 0, 'seconds': []}
            for a in cloud_soak.ACTIONS}, {})
        self.assertEqual(1, figures['nova_leftover_domains_max'])

    def test_grace_covers_the_agents(self):
        from resq_agent import manager
        self.assertGreater(faults.LEFTOVER_GRACE_S,
                           manager.MOVING_OUT_GRACE_S)


class Proc:

    def __init__(self, returncode=0, stdout='', stderr=''):
        self.returncode, self.stdout, self.stderr = (returncode, stdout,
                                                     stderr)


class BrokerTest(base.TestCase):

    LISTING = ('Listing connections ...\nvhost\tpid\tname\n'
               'aio\t<rabbit@h.1.2.0>\t127.0.0.1:1 -> 127.0.0.1:5672\n'
               '/\t<rabbit@h.1.3.0>\t127.0.0.1:2 -> 127.0.0.1:5672\n'
               'aio\t<rabbit@h.1.4.0>\t127.0.0.1:3 -> 127.0.0.1:5672\n')

    def test_parse(self):
        self.assertEqual(['<rabbit@h.1.2.0>', '<rabbit@h.1.4.0>'],
                         faults.parse_connections(self.LISTING, 'aio'))
        self.assertEqual(['<rabbit@h.1.3.0>'],
                         faults.parse_connections(self.LISTING, '/'))

    def test_cut_held_by_repeating(self):
        calls = []
        now = [0.0]

        def run(argv, **kw):
            calls.append(argv)
            return Proc(stdout=self.LISTING)

        def sleep(s):
            now[0] += s

        done = faults.cut_broker('aio', hold_s=3, interval=1, run=run,
                                 clock=lambda: now[0], sleep=sleep)
        self.assertEqual({'closed': 8, 'cuts': 4, 'seconds': 3.0}, done)
        closes = [c for c in calls if 'close_all_connections' in c]
        self.assertEqual(4, len(closes))
        self.assertEqual(['--vhost', 'aio', '--limit', '2'],
                         closes[0][3:7])

    def test_close_one_by_one_without_close_all(self):
        calls = []

        def run(argv, **kw):
            calls.append(argv)
            return Proc(returncode=64 if 'close_all_connections' in argv
                        else 0)

        faults.close_connections('aio', ['<a>', '<b>'], run=run)
        self.assertEqual([['rabbitmqctl', '-q', 'close_connection', '<a>'],
                          ['rabbitmqctl', '-q', 'close_connection', '<b>']],
                         [c[:4] for c in calls[1:]])


class OptimizerTest(base.TestCase):

    MOVES = [{'uuid': S1, 'to_host': 'aio-2'},
             {'uuid': S2, 'to_host': 'aio-2'}]

    def test_applied_plan_counts_moves_nova_shows(self):
        where = {S1: ('ACTIVE', 'aio-2'), S2: ('ACTIVE', 'aio-2')}
        self.assertEqual((2, 2, []), faults.count_applied(
            self.MOVES, 0, 'applied', where))

    def test_failed_apply_counts_nothing_applied(self):
        where = {S1: ('ACTIVE', 'aio-2'), S2: ('ERROR', 'aio-1')}
        applied, moved, problems = faults.count_applied(
            self.MOVES, 2, 'failed', where)
        self.assertEqual((0, 1), (applied, moved))
        self.assertIn('apply exited 2, plan state failed', problems[0])

    def test_applied_but_not_where_nova_says(self):
        where = {S1: ('ACTIVE', 'aio-2'), S2: ('ACTIVE', 'aio-1')}
        applied, moved, problems = faults.count_applied(
            self.MOVES, 0, 'applied', where)
        self.assertEqual((0, 1), (applied, moved))
        self.assertEqual(1, len(problems))

    def test_apply_output(self):
        text = ('done     soak-00001 aio-1:0 -> aio-2:0\n'
                'failed   soak-00002 aio-3:0 -> aio-2:0: timed out\n'
                'p1: failed (one move failed)\nstored: x\n')
        self.assertEqual({'soak-00001': 'done', 'soak-00002': 'failed'},
                         faults.parse_apply_output(text))

    def test_config_from_tempest_conf(self):
        root = self.tmp
        os.makedirs(os.path.join(root, 'tempest', 'etc'))
        with open(os.path.join(root, 'tempest', 'etc', 'tempest.conf'),
                  'w') as f:
            f.write('[resq]\noptimizer_config = /x/resq-optimizer.conf\n')
        self.assertEqual('/x/resq-optimizer.conf',
                         faults.optimizer_config(root))
        self.assertEqual('/d', faults.optimizer_config(
            os.path.join(root, 'none'), default='/d'))

    def test_not_proposed(self):
        out_dir = self.tmp

        def run(argv, **kw):
            path = argv[argv.index('--json') + 1]
            with open(path, 'w') as f:
                json.dump({'id': 'p1', 'proposed': False,
                           'reason': 'nothing to free'}, f)
            return Proc()

        result = faults.optimizer_round('resq-optimizer', 'c.conf', None,
                                        out_dir, 60, run=run)
        self.assertEqual(('not-proposed', 0), (result['outcome'],
                                               result['migrations']))

    def test_plan_command_fails(self):
        def run(argv, **kw):
            return Proc(returncode=1, stderr='ERROR: no Placement')

        result = faults.optimizer_round('resq-optimizer', 'c.conf', None,
                                        self.tmp, 60, run=run)
        self.assertEqual('failed', result['outcome'])
        self.assertIn('no Placement', result['problems'][0])


class FiguresTest(base.TestCase):

    def figures(self):
        faults_done = [
            {'kind': 'agent-kill', 'repartition_s': 12.5, 'errors': [],
             'limit_s': 60, 'action_failures': 1},
            {'kind': 'broker-cut', 'repartition_s': None, 'gave_up_s': 181.0,
             'errors': ['x'], 'limit_s': 60, 'check_failed': True},
            {'kind': 'optimizer', 'repartition_s': 3.0, 'errors': [],
             'limit_s': 60}]
        checks = [
            {'unpartitioned': 0, 'final_unpartitioned': 0, 'doubles': 0,
             'leaks': {'groups': 0, 'allocations': 1, 'domains': 0,
                       'providers': 0, 'plans_applying': 0}},
            {'unpartitioned': 2, 'final_unpartitioned': 1, 'doubles': 1,
             'leaks': {'groups': 3, 'allocations': 0, 'domains': 0,
                       'providers': 0, 'plans_applying': None}}]
        actions = {a: {'ok': 5, 'failed': 1, 'seconds': [1.0, 2.0]}
                   for a in cloud_soak.ACTIONS}
        extra = {'hosts': 4, 'migrations_applied': 2, 'soak_minutes': 30.1,
                 'rss_total_mb': 5000.0,
                 'leaked_meters_reason': faults.METERS_NOT_APPLICABLE}
        return cloud_soak.summarize(faults_done, checks, actions, extra), \
            faults_done, actions

    def test_summary(self):
        figures, _, _ = self.figures()
        self.assertEqual(3, figures['faults_injected'])
        self.assertEqual(1, figures['faults_agent_kill'])
        self.assertEqual(0, figures['faults_api_stop'])
        # A fault never repartitioned counts with the time it was given.
        self.assertEqual(181.0, figures['repartition_after_fault_s_max'])
        self.assertEqual(1, figures['faults_not_repartitioned_in_60s'])
        self.assertEqual(2, figures['unpartitioned_servers_max'])
        self.assertEqual(1, figures['partitioned_twice_max'])
        self.assertEqual((3, 1), (figures['leaked_groups'],
                                  figures['leaked_allocations']))
        self.assertEqual(0, figures['plans_left_applying'])
        self.assertEqual(1, figures['plans_check_unanswered'])
        self.assertIsNone(figures['leaked_meters'])
        self.assertEqual(5, figures['servers_created'])
        self.assertEqual(5, figures['action_failures'])

    def test_json_line_has_the_keys(self):
        figures, _, _ = self.figures()
        line = cloud_soak.result_line(figures)
        self.assertNotIn('\n', line)
        doc = json.loads(line)
        for key in cloud_soak.REQUIRED_KEYS:
            self.assertIn(key, doc)
        for key in ('hosts', 'servers_created', 'faults_injected',
                    'repartition_after_fault_s_max', 'leaked_groups',
                    'leaked_allocations', 'leaked_domains',
                    'unpartitioned_servers_max', 'migrations_applied',
                    'soak_minutes', 'rss_total_mb'):
            self.assertIn(key, cloud_soak.REQUIRED_KEYS)

    def test_json_line_refuses_missing_keys(self):
        figures, _, _ = self.figures()
        del figures['leaked_domains']
        self.assertRaises(ValueError, cloud_soak.result_line, figures)

    def test_tables(self):
        figures, faults_done, actions = self.figures()
        table = cloud_soak.fault_table(faults_done)
        lines = table.splitlines()
        self.assertEqual(1 + len(cloud_soak.FAULT_KINDS), len(lines))
        broker = next(line for line in lines if line.startswith('broker'))
        self.assertEqual(['broker-cut', '1', '181.0', '1', '2', '0'],
                         broker.split())
        self.assertIn('create', cloud_soak.action_table(actions))

    def test_targets(self):
        figures, _, _ = self.figures()
        met = {k: ok for k, _, ok in cloud_soak.targets(figures)}
        self.assertFalse(met['repartition_after_fault_s_max'])
        self.assertFalse(met['leaked_groups'])
        self.assertTrue(met['leaked_domains'])


class RegisteredTest(base.TestCase):

    def test_benchmark_is_registered(self):
        from benchmarks import __main__ as bench_main
        self.assertEqual('benchmarks.cloud_soak',
                         bench_main.BENCHMARKS['cloud-soak'])

    def test_cloud_env_reexec_names_the_benchmark(self):
        from benchmarks import cloud
        calls = []
        self.useFixture(fixtures.MonkeyPatch(
            'os.execv', lambda path, argv: calls.append(argv)))
        self.useFixture(fixtures.MonkeyPatch(
            'os.path.exists', lambda p: True))
        cloud._in_cloud_env(['--minutes', '1'], 'cloud-soak')
        cloud._in_cloud_env(['--keep'])
        self.assertEqual(['-m', 'benchmarks', 'cloud-soak', '--minutes',
                          '1'], calls[0][1:])
        self.assertEqual(['-m', 'benchmarks', 'cloud', '--keep'],
                         calls[1][1:])
