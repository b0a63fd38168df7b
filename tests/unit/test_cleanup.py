"""resq-manage cleanup: the plan, the order, the outcomes (fake cloud)."""

import contextlib
import io
import os
import uuid

import fixtures

from resq_common import cache_domain
from resq_common.clients import placement as placement_mod
from resq_nova.cmd import manage
from resq_nova.deploy import cleanup
from tests import base

CN1 = str(uuid.UUID(int=1))
CN2 = str(uuid.UUID(int=2))
OTHER_CHILD = str(uuid.UUID(int=3))


class FakePlacement:
    """Placement's state as clean-up sees it, with Placement's refusals."""

    def __init__(self):
        self.providers = {}
        self.traits = {'CUSTOM_CAT_L3', 'CUSTOM_RESQ_L3_0',
                       'CUSTOM_RESQ_L3_1', 'CUSTOM_RESQ_LLC_WAYS_11',
                       'CUSTOM_FOREIGN', 'HW_CPU_X86_AVX2'}
        self.classes = set(cleanup.RESOURCE_CLASSES) | {'CUSTOM_FPGA',
                                                        'VCPU'}
        self.allocations = {}
        self.refuse = set()
        self.calls = []

    def add(self, uuid_, name, parent=None, traits=(), inventory=()):
        self.providers[uuid_] = {'uuid': uuid_, 'name': name,
                                 'parent_provider_uuid': parent,
                                 'traits': set(traits),
                                 'inventory': set(inventory)}

    def list_providers(self):
        return [dict(p) for p in self.providers.values()]

    def get_provider_allocations(self, uuid_):
        return dict(self.allocations.get(uuid_, {}))

    def resq_traits(self):
        return sorted(t for t in self.traits
                      if t.startswith('CUSTOM_RESQ_') or t == 'CUSTOM_CAT_L3')

    def providers_with_trait(self, trait):
        return [u for u, p in self.providers.items() if trait in p['traits']]

    def resource_classes(self):
        return set(self.classes)

    def _refused(self, what):
        self.calls.append(what)
        if what in self.refuse:
            raise placement_mod.PlacementError(
                method='DELETE', url=what, reason='500 broken')

    def delete_provider_strict(self, uuid_):
        self._refused(uuid_)
        if self.allocations.get(uuid_):
            raise placement_mod.PlacementError(method='DELETE', url=uuid_,
                                               reason='409 in use')
        self.providers.pop(uuid_, None)

    def delete_trait(self, name):
        self._refused(name)
        if self.providers_with_trait(name):
            raise placement_mod.PlacementError(method='DELETE', url=name,
                                               reason='409 in use')
        self.traits.discard(name)

    def delete_resource_class(self, name):
        self._refused(name)
        if any(name in p['inventory'] for p in self.providers.values()):
            raise placement_mod.PlacementError(method='DELETE', url=name,
                                               reason='409 in use')
        self.classes.discard(name)


class FakeCompute:

    def __init__(self):
        self.flavors = {}
        self.servers = []
        self.deleted = []

    def add_flavor(self, fid, name, specs):
        self.flavors[fid] = {'id': fid, 'name': name, 'extra_specs': specs}

    def list_flavors(self):
        return list(self.flavors.values())

    def list_all_servers(self):
        return [{'id': s, 'flavor': {'original_name': n}}
                for s, n in self.servers]

    def delete_flavor(self, fid):
        self.deleted.append(fid)
        del self.flavors[fid]


RESQ_SPECS = {'resources_LLC:CUSTOM_LLC_WAY': '4', 'resq:slo': 'reserved',
              'trait_LLC:CUSTOM_RESQ_LLC_WAYS_11': 'required'}


def cloud():
    """Two compute hosts with ResQ domains, and things that are not ResQ's.

    Look-alikes must survive: a child named like a domain but with another
    UUID, a root provider named like one, a flavor named resq.* without
    resq: specs, a trait and a class of other names.
    """
    pl = FakePlacement()
    pl.add(CN1, 'cn1', traits={'HW_CPU_X86_AVX2'}, inventory={'VCPU'})
    pl.add(CN2, 'cn2')
    for cn, host in ((CN1, 'cn1'), (CN2, 'cn2')):
        for d in (0, 1):
            pl.add(cache_domain.provider_uuid(cn, d),
                   cache_domain.provider_name(host, d), parent=cn,
                   traits={'CUSTOM_CAT_L3', 'CUSTOM_RESQ_L3_%d' % d,
                           'CUSTOM_RESQ_LLC_WAYS_11'},
                   inventory=set(cleanup.RESOURCE_CLASSES[:3]))
    pl.add(OTHER_CHILD, 'cn1_llc_7', parent=CN1, traits={'CUSTOM_FOREIGN'},
           inventory={'CUSTOM_FPGA'})
    pl.add(str(uuid.UUID(int=4)), 'cn9_llc_0')
    co = FakeCompute()
    co.add_flavor('f1', 'resq.fw.4w', dict(RESQ_SPECS))
    co.add_flavor('f2', 'resq.fw.6w', dict(RESQ_SPECS))
    co.add_flavor('f3', 'm1.small', {})
    co.add_flavor('f4', 'resq.lookalike.1w', {'hw:cpu_policy': 'dedicated'})
    co.add_flavor('f5', 'handmade', {'resources1:CUSTOM_LLC_WAY': '2',
                                     'hw:cpu_policy': 'dedicated'})
    return pl, co


def actions(plan):
    return {(i.kind, i.name): i.action for i in plan.items}


class PlanTest(base.TestCase):

    def test_finds_only_resq_names_and_keeps_what_is_used(self):
        pl, co = cloud()
        co.servers = [('s1', 'resq.fw.6w'), ('s2', 'm1.small')]
        busy = cache_domain.provider_uuid(CN2, 1)
        pl.allocations[busy] = {'s1': {'CUSTOM_LLC_WAY': 4}}
        plan = cleanup.make_plan(pl, co)
        got = actions(plan)
        self.assertEqual('remove', got[('flavor', 'resq.fw.4w')])
        self.assertEqual('keep', got[('flavor', 'resq.fw.6w')])
        self.assertEqual('keep', got[('flavor', 'handmade')])
        for name in ('m1.small', 'resq.lookalike.1w'):
            self.assertNotIn(('flavor', name), got)
        for name in ('cn1_llc_0', 'cn1_llc_1', 'cn2_llc_0'):
            self.assertEqual('remove', got[('provider', name)])
        self.assertEqual('keep', got[('provider', 'cn2_llc_1')])
        for name in ('cn1', 'cn2', 'cn1_llc_7', 'cn9_llc_0'):
            self.assertNotIn(('provider', name), got)
        self.assertEqual('remove', got[('trait', 'CUSTOM_RESQ_L3_0')])
        # On the kept provider too: kept.
        for trait in ('CUSTOM_RESQ_L3_1', 'CUSTOM_CAT_L3',
                      'CUSTOM_RESQ_LLC_WAYS_11'):
            self.assertEqual('keep', got[('trait', trait)])
        self.assertNotIn(('trait', 'CUSTOM_FOREIGN'), got)
        for rc in cleanup.RESOURCE_CLASSES:
            self.assertEqual('keep', got[('resource class', rc)])
        text = '\n'.join(plan.lines())
        self.assertIn('1 server(s) use it', text)
        self.assertIn('1 consumer(s) hold allocations on it (s1)', text)
        self.assertIn('resources1:CUSTOM_LLC_WAY', text)

    def test_free_cloud_plans_everything_and_changes_nothing(self):
        pl, co = cloud()
        before = (set(pl.providers), set(pl.traits), set(pl.classes),
                  set(co.flavors))
        plan = cleanup.make_plan(pl, co)
        self.assertEqual(['CUSTOM_CAT_L3', 'CUSTOM_RESQ_L3_0',
                          'CUSTOM_RESQ_L3_1', 'CUSTOM_RESQ_LLC_WAYS_11'],
                         sorted(i.name for i in plan.to_remove('trait')))
        # The hand-made flavor still asks for CUSTOM_LLC_WAY: it stays.
        self.assertEqual(sorted(set(cleanup.RESOURCE_CLASSES)
                                - {'CUSTOM_LLC_WAY'}), sorted(
            i.name for i in plan.to_remove('resource class')))
        self.assertIn('keep    resource class CUSTOM_LLC_WAY: kept flavor(s) '
                      'ask for it: handmade (resources1:CUSTOM_LLC_WAY)',
                      '\n'.join(plan.lines()))
        self.assertEqual(before, (set(pl.providers), set(pl.traits),
                                  set(pl.classes), set(co.flavors)))

    def test_kept_flavors_keep_the_traits_and_classes_they_name(self):
        # A hand-made flavor requiring and forbidding traits in groups, and
        # a ResQ flavor in use whose servers hold no allocation any more
        # (their host is gone): every provider goes, not what they name.
        pl, co = cloud()
        co.add_flavor('f6', 'handmade.cat', {
            'trait:CUSTOM_CAT_L3': 'required',
            'trait1:CUSTOM_RESQ_L3_0': 'forbidden',
            'resources_G:CUSTOM_LLC_CLOS': '1'})
        co.servers = [('s1', 'resq.fw.6w')]
        plan = cleanup.make_plan(pl, co)
        got = actions(plan)
        for name in ('cn1_llc_0', 'cn1_llc_1', 'cn2_llc_0', 'cn2_llc_1'):
            self.assertEqual('remove', got[('provider', name)])
        for trait in ('CUSTOM_CAT_L3', 'CUSTOM_RESQ_L3_0',
                      'CUSTOM_RESQ_LLC_WAYS_11'):
            self.assertEqual('keep', got[('trait', trait)], trait)
        for rc in ('CUSTOM_LLC_WAY', 'CUSTOM_LLC_CLOS'):
            self.assertEqual('keep', got[('resource class', rc)], rc)
        self.assertEqual('remove', got[('trait', 'CUSTOM_RESQ_L3_1')])
        self.assertEqual('remove', got[('resource class',
                                        'CUSTOM_RESQ_CORE')])
        lines = plan.lines()
        self.assertIn(
            'keep    trait CUSTOM_RESQ_L3_0: kept flavor(s) ask for it: '
            'handmade.cat (trait1:CUSTOM_RESQ_L3_0); Nova cannot schedule a '
            'flavor naming a trait Placement does not know: delete the '
            'flavor or unset the key first', lines)
        self.assertIn(
            'keep    resource class CUSTOM_LLC_WAY: kept flavor(s) ask for '
            'it: handmade (resources1:CUSTOM_LLC_WAY), resq.fw.6w '
            '(resources_LLC:CUSTOM_LLC_WAY); Nova cannot schedule a flavor '
            'naming a resource class Placement does not know: delete the '
            'flavor or unset the key first', lines)
        self.assertIn('resq.fw.6w (trait_LLC:CUSTOM_RESQ_LLC_WAYS_11)',
                      '\n'.join(lines))
        done = cleanup.execute(plan, pl, co, True)
        self.assertTrue(cleanup.succeeded(done))
        self.assertEqual([], cleanup.declined(done))
        self.assertEqual({'CUSTOM_CAT_L3', 'CUSTOM_RESQ_L3_0',
                          'CUSTOM_RESQ_LLC_WAYS_11', 'CUSTOM_FOREIGN',
                          'HW_CPU_X86_AVX2'}, pl.traits)
        self.assertEqual({'CUSTOM_LLC_WAY', 'CUSTOM_LLC_CLOS', 'CUSTOM_FPGA',
                          'VCPU'}, pl.classes)


class ExecuteTest(base.TestCase):

    def test_removes_in_order_and_a_second_plan_is_empty(self):
        pl, co = cloud()
        done = cleanup.execute(cleanup.make_plan(pl, co), pl, co, True)
        self.assertTrue(cleanup.succeeded(done))
        self.assertEqual(['f1', 'f2'], co.deleted)
        kinds = [i.kind for i in done]
        self.assertEqual(kinds, sorted(kinds, key=[
            'flavor', 'provider', 'trait', 'resource class'].index))
        self.assertEqual({CN1, CN2, OTHER_CHILD, str(uuid.UUID(int=4))},
                         set(pl.providers))
        self.assertEqual({'CUSTOM_FOREIGN', 'HW_CPU_X86_AVX2'}, pl.traits)
        # What the kept hand-made flavor asks for stays.
        self.assertEqual({'CUSTOM_FPGA', 'VCPU', 'CUSTOM_LLC_WAY'},
                         pl.classes)
        self.assertEqual({'f3', 'f4', 'f5'}, set(co.flavors))
        again = cleanup.make_plan(pl, co)
        self.assertEqual([], again.to_remove())

    def test_declined_flavors_stay_with_what_they_ask_for(self):
        pl, co = cloud()
        co.flavors['f2']['extra_specs']['trait_LLC:CUSTOM_CAT_L3'] = \
            'required'
        done = {i.name: i for i in cleanup.execute(
            cleanup.make_plan(pl, co), pl, co, False)}
        self.assertEqual([], co.deleted)
        self.assertEqual('declined', done['resq.fw.4w'].outcome)
        self.assertEqual('declined', done['resq.fw.6w'].outcome)
        self.assertTrue(cleanup.succeeded(done.values()))
        # The declined flavors still require these: kept, and said why.
        # Planned as kept already (the hand-made flavor asks for it).
        self.assertNotIn('CUSTOM_LLC_WAY', done)
        self.assertIn('CUSTOM_LLC_WAY', pl.classes)
        for name in ('CUSTOM_CAT_L3', 'CUSTOM_RESQ_LLC_WAYS_11'):
            self.assertEqual('kept', done[name].outcome)
            self.assertIn(name, pl.traits)
            self.assertNotIn(name, pl.calls)
        self.assertEqual('flavor(s) resq.fw.6w ask for it and were not '
                         'deleted', done['CUSTOM_CAT_L3'].error)
        self.assertIn('resq.fw.4w, resq.fw.6w',
                      done['CUSTOM_RESQ_LLC_WAYS_11'].error)
        # What no flavor names goes: the providers, their other traits,
        # the classes only providers had.
        self.assertEqual('removed', done['CUSTOM_RESQ_L3_0'].outcome)
        self.assertEqual('removed', done['CUSTOM_RESQ_CORE'].outcome)
        self.assertNotIn('CUSTOM_RESQ_CORE', pl.classes)
        self.assertEqual(['resq.fw.4w', 'resq.fw.6w', 'CUSTOM_CAT_L3',
                          'CUSTOM_RESQ_LLC_WAYS_11'],
                         [i.name for i in cleanup.declined(done.values())])

    def test_a_failed_provider_stops_what_depends_on_it(self):
        pl, co = cloud()
        broken = cache_domain.provider_uuid(CN1, 0)
        pl.refuse.add(broken)
        done = {i.name: i for i in cleanup.execute(
            cleanup.make_plan(pl, co), pl, co, True)}
        self.assertFalse(cleanup.succeeded(done.values()))
        self.assertEqual('failed', done['cn1_llc_0'].outcome)
        self.assertIn('500 broken', done['cn1_llc_0'].error)
        self.assertEqual('removed', done['cn1_llc_1'].outcome)
        # Carried by the provider that stayed: not tried.
        for name in ('CUSTOM_RESQ_L3_0', 'CUSTOM_CAT_L3', 'CUSTOM_LLC_CLOS'):
            self.assertEqual('skipped', done[name].outcome)
            self.assertIn(broken, done[name].error)
            self.assertNotIn(name, pl.calls)
        self.assertEqual('removed', done['CUSTOM_RESQ_L3_1'].outcome)
        self.assertIn('CUSTOM_LLC_CLOS', pl.classes)

    def test_placement_refusal_is_a_failure_not_a_success(self):
        pl, co = cloud()
        plan = cleanup.make_plan(pl, co)
        # Someone else's provider took an inventory of the class since.
        pl.providers[OTHER_CHILD]['inventory'].add('CUSTOM_LLC_CLOS')
        done = {i.name: i for i in cleanup.execute(plan, pl, co, True)}
        self.assertEqual('failed', done['CUSTOM_LLC_CLOS'].outcome)
        self.assertIn('409 in use', done['CUSTOM_LLC_CLOS'].error)
        self.assertFalse(cleanup.succeeded(done.values()))


class ManageCleanupTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.pl, self.co = cloud()
        self.useFixture(fixtures.MockPatchObject(
            cleanup.Placement, 'from_conf', return_value=self.pl))
        self.useFixture(fixtures.MockPatchObject(
            cleanup.Compute, 'from_conf', return_value=self.co))
        self.conf_file = os.path.join(self.tmp, 'resq.conf')
        with open(self.conf_file, 'w') as f:
            f.write('[placement]\nendpoint_override = http://127.0.0.1:9/\n'
                    '[nova]\nendpoint_override = http://127.0.0.1:9/\n')

    def run_main(self, *args, stdin=''):
        out, err = io.StringIO(), io.StringIO()
        self.useFixture(fixtures.MonkeyPatch('sys.stdin',
                                             io.StringIO(stdin)))
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = manage.main(['cleanup', '--config-file', self.conf_file]
                             + list(args))
        return rc, out.getvalue(), err.getvalue()

    def test_dry_run_prints_the_plan_and_changes_nothing(self):
        rc, out, err = self.run_main('--dry-run')
        self.assertEqual(0, rc, err)
        self.assertIn('remove  flavor resq.fw.4w (f1)', out)
        self.assertIn('remove  provider cn1_llc_0 (%s)'
                      % cache_domain.provider_uuid(CN1, 0), out)
        self.assertIn('--dry-run: nothing removed', out)
        self.assertEqual([], self.pl.calls)
        self.assertEqual([], self.co.deleted)

    def test_no_credentials_is_a_configuration_it_cannot_run_with(self):
        from resq_common.conf import clients as clients_conf

        cleanup.Placement.from_conf.side_effect = \
            clients_conf.MissingCredentials(group='placement',
                                            service='placement',
                                            reason='auth_type is not set')
        rc, out, err = self.run_main('--dry-run')
        self.assertEqual(2, rc, err)
        self.assertIn('[placement]', err)
        self.assertEqual(1, len(err.splitlines()), err)

    def test_asks_before_flavors_and_no_keeps_them(self):
        rc, out, err = self.run_main(stdin='n\n')
        self.assertEqual(manage.DECLINED, rc, err)
        self.assertEqual(
            'resq-manage: kept flavor resq.fw.4w, flavor resq.fw.6w, trait '
            'CUSTOM_RESQ_LLC_WAYS_11: nobody agreed to delete the flavors; '
            'run "resq-manage cleanup --yes" (or answer y) to remove them\n',
            err)
        self.assertIn('kept     trait CUSTOM_RESQ_LLC_WAYS_11: flavor(s) '
                      'resq.fw.4w, resq.fw.6w ask for it and were not '
                      'deleted', out)
        self.assertIn('CUSTOM_RESQ_LLC_WAYS_11', self.pl.traits)
        self.assertIn('Delete 2 flavor(s) (resq.fw.4w, resq.fw.6w)? [y/N]',
                      out)
        self.assertIn('declined flavor resq.fw.4w', out)
        self.assertEqual({'f1', 'f2'}, set(self.co.flavors) & {'f1', 'f2'})
        self.assertIn('removed  provider cn1_llc_0', out)

    def test_closed_stdin_keeps_flavors_and_exits_declined(self):
        rc, out, err = self.run_main()
        self.assertEqual(3, rc, err)
        self.assertIn('give --yes', out)
        self.assertIn('kept flavor resq.fw.4w', err)
        self.assertEqual(1, len(err.splitlines()), err)
        self.assertEqual([], self.co.deleted)
        # Once agreed, the rest goes and the run succeeds.
        rc, out, err = self.run_main('--yes')
        self.assertEqual(0, rc, err)
        self.assertIn('removed  trait CUSTOM_RESQ_LLC_WAYS_11', out)

    def test_yes_removes_all_and_second_run_finds_nothing(self):
        rc, out, err = self.run_main('--yes')
        self.assertEqual(0, rc, err)
        self.assertNotIn('[y/N]', out)
        self.assertEqual(['f1', 'f2'], self.co.deleted)
        rc, out, err = self.run_main('--yes')
        self.assertEqual(0, rc, err)
        self.assertIn("nothing of resq-nova's left to remove", out)
        self.assertNotIn('removed', out)
        # The hand-made flavor is reported, never changed.
        self.assertIn('keep    flavor handmade (f5)', out)

    def test_failure_exits_1_and_says_what_failed(self):
        self.pl.refuse.add(cache_domain.provider_uuid(CN2, 0))
        rc, out, err = self.run_main('--yes')
        self.assertEqual(1, rc)
        self.assertIn('failed   provider cn2_llc_0', out)
        self.assertIn('skipped  trait CUSTOM_CAT_L3: not tried', out)
        self.assertIn('failed or were not tried', err)

    def test_unreachable_placement_is_one_line(self):
        def boom():
            raise placement_mod.PlacementUnavailable(reason='refused')

        self.pl.list_providers = boom
        rc, out, err = self.run_main('--dry-run')
        self.assertEqual(1, rc)
        self.assertEqual(1, len(err.strip().splitlines()), err)
        self.assertIn('cannot make the clean-up plan: Placement is '
                      'unreachable', err)
