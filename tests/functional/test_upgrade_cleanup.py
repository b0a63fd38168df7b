"""An operator's life cycle on Nova's harness: install, use, upgrade, remove.

Install with the previous layout's class paths (the deprecated aliases),
boot a ResQ flavor, upgrade nova.conf to the new paths and restart the
scheduler, boot again, then remove everything ResQ made with
``resq-manage cleanup`` (a dry run first). Placement, the API and the
scheduler are Nova's own, in-process; the cache-domain providers are
reported as the agent reports them.
"""

import contextlib
import io
import os
import uuid

import fixtures

from resq_common import cache_domain
from resq_nova.cmd import manage
from resq_nova.deploy import cleanup
from resq_nova.nova.scheduler import filters as new_filters
from resq_nova.nova.scheduler import weights as new_weights
from resq_nova.scheduler import filters as old_filters
from resq_nova.scheduler import weights as old_weights
from tests.functional import test_nova_scheduler

WARNING = ('Deprecated: %s is a deprecated alias of %s, kept for one '
           'release: write %s in nova.conf [filter_scheduler] %s.')
OTHER_TRAIT = 'CUSTOM_OTHER_TEAM'
OTHER_CLASS = 'CUSTOM_OTHER_ACCEL'


class UpgradeAndCleanupTest(test_nova_scheduler.ResQNovaTestBase):

    # nova.conf as the previous release wrote it.
    FILTER_PATH = old_filters.OLD_PATH
    WEIGHER_PATH = old_weights.OLD_PATH

    def setUp(self):
        from oslo_log import versionutils

        # Each warning is logged once per process: this test's scheduler
        # starts with none sent yet.
        self.useFixture(fixtures.MockPatchObject(
            versionutils, '_deprecated_messages_sent', {}))
        super().setUp()
        self.conf_file = os.path.join(
            self.useFixture(fixtures.TempDir()).path, 'resq-manage.conf')
        with open(self.conf_file, 'w') as f:
            f.write('[placement]\nendpoint_override = %s\n[nova]\n'
                    'endpoint_override = %s\n' % (
                        self.placement.fixture.endpoint, self.api.base_url))
        api = self.api
        self.useFixture(fixtures.MockPatchObject(
            cleanup.Placement, 'from_conf',
            lambda conf: cleanup.Placement.for_endpoint(
                conf.placement.endpoint_override)))
        self.useFixture(fixtures.MockPatchObject(
            cleanup.Compute, 'from_conf',
            lambda conf: cleanup.Compute.for_endpoint(
                conf.nova.endpoint_override, headers={
                    'X-Auth-User': api.auth_user,
                    'X-User-Id': api.auth_user,
                    'X-Auth-Project-Id': api.project_id,
                    'X-Roles': ','.join(api.roles)}, poll_interval=0.1)))

    def warnings(self, old, new, option):
        return self.stdlog.logger.output.count(WARNING % (old, new, new,
                                                          option))

    def cleanup(self, *args, stdin=''):
        out, err = io.StringIO(), io.StringIO()
        with fixtures.MonkeyPatch('sys.stdin', io.StringIO(stdin)):
            with contextlib.redirect_stdout(out), \
                    contextlib.redirect_stderr(err):
                rc = manage.main(['--config-file', self.conf_file,
                                  'cleanup'] + list(args))
        return rc, out.getvalue(), err.getvalue()

    def _install_and_use(self):
        hm = self.scheduler.manager.host_manager
        self.assertIsInstance(hm.filter_obj_map['ResQFilter'],
                              old_filters.ResQFilter)
        self.assertEqual(1, self.warnings(
            old_filters.OLD_PATH, old_filters.NEW_PATH, 'available_filters'))
        self.assertEqual(1, self.warnings(
            old_weights.OLD_PATH, new_weights.__name__ + '.ResQWeigher',
            'weight_classes'))
        rps = {h: self.start_resq_compute(h, sockets=2)
               for h in ('host1', 'host2')}
        flavor = self.resq_flavor(ways=3, name='resq.fw.3w')
        server = self._create_server(flavor_id=flavor, networks='none')
        return rps, flavor, server

    def _upgrade(self):
        # nova.conf gets the new paths; nova-scheduler restarts.
        self.scheduler.stop()
        self.flags(available_filters=[
            'nova.scheduler.filters.all_filters',
            new_filters.__name__ + '.ResQFilter'], group='filter_scheduler')
        self.flags(weight_classes=[
            'nova.scheduler.weights.all_weighers',
            new_weights.__name__ + '.ResQWeigher'], group='filter_scheduler')
        self.scheduler = self.start_service('scheduler')
        self.addCleanup(self.scheduler.stop)
        hm = self.scheduler.manager.host_manager
        resq = hm.filter_obj_map['ResQFilter']
        self.assertIs(new_filters.ResQFilter, type(resq))
        self.assertEqual(1, len([w for w in hm.weighers if type(w) is
                                 new_weights.ResQWeigher]))

    def _foreign(self):
        """What is not ResQ's: a flavor, a trait, a class, a look-alike."""
        other = self._create_flavor(name='m1.keep', vcpu=1, memory_mb=512,
                                    disk=1, ephemeral=0,
                                    extra_spec={'hw:cpu_policy': 'shared'})
        host1 = self.client.find_provider('host1')['uuid']
        lookalike = str(uuid.uuid4())
        self.client.ensure_provider(lookalike, 'host1_llc_5',
                                    parent_uuid=host1)
        self.client.set_traits(lookalike, [OTHER_TRAIT,
                                           'CUSTOM_RESQ_LOOKALIKE'])
        self.client.set_inventories(lookalike, {OTHER_CLASS: {'total': 2}})
        self.client.ensure_trait('CUSTOM_UNUSED_OTHER')
        return other, lookalike

    def test_install_use_upgrade_remove(self):
        rps, flavor, first = self._install_and_use()
        self.assertEqual(3, sum(self.llc_usage(rp) for h in rps.values()
                                for rp in h.values()))
        self._upgrade()
        first = self._show_server(first)
        self.assertEqual('ACTIVE', first['status'])
        second = self._create_server(flavor_id=flavor, networks='none')
        self.assertEqual(6, sum(self.llc_usage(rp) for h in rps.values()
                                for rp in h.values()))
        other, lookalike = self._foreign()

        # Servers still there: their flavor and providers are kept.
        rc, out, err = self.cleanup('--dry-run')
        self.assertEqual(0, rc, err)
        self.assertIn('keep    flavor resq.fw.3w (%s): 2 server(s) use it'
                      % flavor, out)
        self.assertIn('consumer(s) hold allocations', out)
        self.assertIn('--dry-run: nothing removed', out)
        for server in (first, second):
            self._delete_server(server)

        rc, out, err = self.cleanup('--dry-run')
        self.assertEqual(0, rc, err)
        self.assertIn('remove  flavor resq.fw.3w', out)
        for host, domains in rps.items():
            for d, rp in domains.items():
                self.assertIn('remove  provider %s_llc_%d (%s)'
                              % (host, d, rp), out)
        self.assertIn('keep    trait CUSTOM_RESQ_LOOKALIKE: still on '
                      'provider(s) %s' % lookalike, out)
        for name in ('m1.keep', 'host1_llc_5', OTHER_TRAIT, OTHER_CLASS,
                     'CUSTOM_UNUSED_OTHER'):
            self.assertNotIn(name, out)
        self.assertIsNotNone(self.compute_client().find_flavor('resq.fw.3w'))
        self.assertIsNotNone(self.client.get_provider(rps['host1'][0]))

        rc, out, err = self.cleanup('--yes')
        self.assertEqual(0, rc, err)
        self.assertNotIn('failed', out)
        self._assert_removed(rps)
        self._assert_untouched(other, lookalike)

        # A second run finds nothing left to remove, and changes nothing.
        rc, out, err = self.cleanup('--yes')
        self.assertEqual(0, rc, err)
        self.assertIn("nothing of resq-nova's left to remove", out)
        self.assertNotIn('removed', out)
        self._assert_untouched(other, lookalike)

    def test_kept_flavors_keep_what_they_require(self):
        # A ResQ flavor as admission writes it (the domain's trait in its
        # group) and a hand-made one requiring the trait and the ways.
        rps = self.start_resq_compute('host1')
        self.resq_flavor(ways=3, name='resq.fw.3w', **{
            'trait_LLC:CUSTOM_CAT_L3': 'required'})
        handmade = self._create_flavor(
            name='m1.cat', vcpu=1, memory_mb=512, disk=1, ephemeral=0,
            extra_spec={'trait:CUSTOM_CAT_L3': 'required',
                        'resources1:CUSTOM_LLC_WAY': '2'})
        pl = cleanup.Placement.for_endpoint(self.placement.fixture.endpoint)

        # Non-interactive, no --yes: the ResQ flavor is declined, and so
        # is what it alone asks for; the status says so.
        rc, out, err = self.cleanup()
        self.assertEqual(manage.DECLINED, rc, out + err)
        self.assertIn('keep    trait CUSTOM_CAT_L3: kept flavor(s) ask for '
                      'it: m1.cat (trait:CUSTOM_CAT_L3)', out)
        self.assertIn('keep    resource class CUSTOM_LLC_WAY: kept '
                      'flavor(s) ask for it: m1.cat '
                      '(resources1:CUSTOM_LLC_WAY)', out)
        self.assertIn('declined flavor resq.fw.3w', out)
        self.assertIn('kept     resource class CUSTOM_LLC_CLOS: flavor(s) '
                      'resq.fw.3w ask for it and were not deleted', out)
        self.assertIn('kept flavor resq.fw.3w, resource class '
                      'CUSTOM_LLC_CLOS', err)
        self.assertEqual(1, len(err.splitlines()), err)
        for rp in rps.values():
            self.assertIsNone(self.client.get_provider(rp))
        self.assertIn('CUSTOM_LLC_CLOS', pl.resource_classes())

        rc, out, err = self.cleanup('--yes')
        self.assertEqual(0, rc, out + err)
        self.assertIsNone(self.compute_client().find_flavor('resq.fw.3w'))
        self.assertNotIn('CUSTOM_LLC_CLOS', pl.resource_classes())
        self.assertIn('CUSTOM_LLC_WAY', pl.resource_classes())
        self.assertIn('CUSTOM_CAT_L3', pl.resq_traits())

        # The kept flavor still schedules: no valid host (its ways are
        # gone with the providers), not a scheduler failing on an
        # unknown trait.
        server = self._create_server(flavor_id=handmade, networks='none',
                                     expected_state='ERROR')
        self.assertIn('No valid host', server['fault']['message'])

    def _assert_removed(self, rps):
        compute = self.compute_client()
        self.assertIsNone(compute.find_flavor('resq.fw.3w'))
        for domains in rps.values():
            for rp in domains.values():
                self.assertIsNone(self.client.get_provider(rp))
        pl = cleanup.Placement.for_endpoint(self.placement.fixture.endpoint)
        self.assertEqual(['CUSTOM_RESQ_LOOKALIKE'], pl.resq_traits())
        self.assertFalse(set(cleanup.RESOURCE_CLASSES)
                         & pl.resource_classes())
        # The compute nodes themselves stay.
        for host in rps:
            self.assertEqual(host, self.client.find_provider(host)['name'])

    def _assert_untouched(self, other, lookalike):
        self.assertIsNotNone(self.compute_client().find_flavor('m1.keep'))
        self.assertEqual('host1_llc_5',
                         self.client.get_provider(lookalike)['name'])
        self.assertEqual(['CUSTOM_OTHER_TEAM', 'CUSTOM_RESQ_LOOKALIKE'],
                         self.client.get_traits(lookalike))
        self.assertEqual({OTHER_CLASS}, set(
            self.client.get_inventories(lookalike)))
        pl = cleanup.Placement.for_endpoint(self.placement.fixture.endpoint)
        self.assertIn(OTHER_CLASS, pl.resource_classes())
        self.assertIn('CUSTOM_UNUSED_OTHER', pl._call(
            'GET', '/traits?name=startswith:CUSTOM_UNUSED', '1.6')['traits'])
        # The domains Placement had do not belong to the look-alike.
        self.assertIsNone(cache_domain.domain_of(
            self.client.find_provider('host1')['uuid'], lookalike))
