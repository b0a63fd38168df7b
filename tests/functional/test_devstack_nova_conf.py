"""The nova.conf the devstack plugin writes, read by Nova's own code.

The plugin's post-config phase runs under the devstack stand-in of
``tests/unit/devstack``; the resulting nova.conf is then parsed with Nova's
option definitions and its filter and weigher lists are loaded the way
nova-scheduler's HostManager loads them.
"""

import os
import re

from nova.conf import compute as nova_compute_conf
from nova.conf import notifications as nova_notifications_conf
from nova.conf import scheduler as nova_scheduler_conf
from nova.scheduler import filters as nova_filters
from nova.scheduler import weights as nova_weights
from oslo_config import cfg

from resq_nova.nova.scheduler import filters as resq_filters
from resq_nova.nova.scheduler import weights as resq_weights
from tests import base
from tests.unit.devstack import test_plugin

NOVA_RST = os.path.join(test_plugin.REPO, 'doc', 'source', 'admin',
                        'nova.rst')


def _nova_conf(path):
    conf = cfg.ConfigOpts()
    nova_scheduler_conf.register_opts(conf)
    nova_notifications_conf.register_opts(conf)
    nova_compute_conf.register_opts(conf)
    conf(['--config-file', path], project='nova')
    return conf


class DevstackNovaConfTest(base.TestCase):

    def assert_scheduler_loads_resq(self, sched):
        """What HostManager.__init__ and _choose_host_filters do."""
        classes = nova_filters.HostFilterHandler().get_matching_classes(
            sched.available_filters)
        by_name = {cls.__name__: cls for cls in classes}
        self.assertEqual(set(), set(sched.enabled_filters) - set(by_name))
        self.assertIs(resq_filters.ResQFilter, by_name['ResQFilter'])
        self.assertIn('ComputeFilter', by_name)
        self.assertIn('NUMATopologyFilter', sched.enabled_filters)
        self.assertIn('ResQFilter', sched.enabled_filters)
        weighers = nova_weights.HostWeightHandler().get_matching_classes(
            sched.weight_classes)
        self.assertEqual(
            set(nova_weights.all_weighers()) | {resq_weights.ResQWeigher},
            set(weighers))

    def test_the_admin_guides_nova_conf_loads_resq_and_novas_weighers(self):
        with open(NOVA_RST) as f:
            text = f.read()
        block = re.search(r'\n    \[filter_scheduler\]\n(?:    .*\n)+', text)
        self.assertIsNotNone(block, 'no [filter_scheduler] block in nova.rst')
        path = os.path.join(self.tmp, 'nova.conf')
        with open(path, 'w') as f:
            lines = block.group(0).strip('\n').splitlines()
            f.write('\n'.join(line[4:] for line in lines))
        self.assert_scheduler_loads_resq(_nova_conf(path).filter_scheduler)

    def test_nova_loads_the_plugin_filters_and_weighers(self):
        ds = self.useFixture(test_plugin.Devstack())
        ds.run(test_plugin.POST_CONFIG)
        conf = _nova_conf(ds.nova_conf)
        sched = conf.filter_scheduler
        self.assert_scheduler_loads_resq(sched)
        self.assertEqual('both', conf.notifications.notification_format)
        self.assertTrue(conf.compute.cpu_dedicated_set)
