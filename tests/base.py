"""Shared test base classes and fixtures."""

import json
import os

import fixtures
from oslo_config import cfg
from oslo_config import fixture as config_fixture
from oslotest import base as oslotest_base

from resq_agent import conf as agent_conf
from resq_agent import privsep
from resq_common import deadline
from resq_nova import conf as nova_conf
from resq_profiler import conf as prof_conf
from resq_profiler import privsep as prof_privsep


class PrivsepInProcess(fixtures.Fixture):
    """Run the resctrl privsep entry points in the test process.

    The tests run as an ordinary user's tree in a temporary directory, so
    the privileged functions need no daemon; their argument checks still
    run, which is what the tests exercise. The privileged side reads its
    root from ``conf`` (``[resq_agent]``/``[resq_profiler] resctrl_root``)
    as the daemon reads it from the configuration files; the resctrl mount
    check (statfs magic) is off, the tree being a temporary directory.
    """

    def __init__(self, conf):
        super().__init__()
        self.conf = conf

    def _setUp(self):
        for ctx in (privsep.resctrl_pctxt, prof_privsep.resctrl_pctxt):
            previous = ctx.use_conf(self.conf)
            self.addCleanup(ctx.use_conf, previous)
            ctx.set_client_mode(False)
            self.addCleanup(ctx.set_client_mode, True)
        self.useFixture(fixtures.MonkeyPatch(
            'resq_common.resctrl_writer.CHECK_FS_MAGIC', False))


def _without_etc(search):
    def dirs(project=None):
        return [d for d in search(project)
                if not os.path.abspath(d).startswith('/etc')]
    return dirs


class TestCase(oslotest_base.BaseTestCase):
    """Base class: a private ConfigOpts with every resq group registered.

    oslotest captures stdout, stderr and logging (OS_*_CAPTURE in tox.ini).
    """

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.NestedTempfile())
        # oslo.config's default search stays out of this machine's /etc:
        # a cloud or devstack run here leaves /etc/resq/resq.conf behind,
        # which every command would otherwise read.
        self.useFixture(fixtures.MonkeyPatch(
            'oslo_config.cfg._get_config_dirs',
            _without_etc(cfg._get_config_dirs)))
        conf = cfg.ConfigOpts()
        prof_conf.register_opts(conf)
        nova_conf.register_opts(conf)
        agent_conf.register_opts(conf)
        conf([], project='resq')
        self.conf_fixture = self.useFixture(config_fixture.Config(conf))
        self.conf = conf
        self.tmp = self.useFixture(fixtures.TempDir()).path
        # Each test sees only the dependencies it used.
        deadline.reset()
        self.addCleanup(deadline.reset)

    def flags(self, group, **kw):
        for key, value in kw.items():
            self.conf_fixture.config(group=group, **{key: value})

    def write_json(self, name, doc):
        path = os.path.join(self.tmp, name)
        with open(path, 'w') as f:
            if isinstance(doc, str):
                f.write(doc)
            else:
                json.dump(doc, f)
        return path
