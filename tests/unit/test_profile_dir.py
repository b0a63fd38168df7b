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
"""One option names the profile store: ``[resq] profile_dir``.

The profiler (which writes the store) and admission and ``resq-plan``
(which read and write it) read the same option; ``[resq_profiler]
profile_dir`` is its deprecated name, still read with a deprecation
warning. Every check here only reads: a command reading another
directory than the one configured would find nothing, not write to the
default ``/var/lib/resq/profiles``.
"""

import contextlib
import io
import json
import os

import fixtures
from oslo_config import cfg

from resq_common import profile as profile_mod
from resq_nova.cmd import plan as plan_cmd
from resq_nova import conf as nova_conf
from resq_nova.conf import audit
from resq_profiler.cmd import profiler as profiler_cmd
from resq_profiler import conf as prof_conf
from resq_profiler import store as store_mod
from tests import base
from tests.unit.resq_profiler import test_profile


class ProfileDirTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.store = os.path.join(self.tmp, 'profiles')
        doc = test_profile.make_doc()
        store_mod.ProfileStore(self.store).put(
            profile_mod.Profile.from_dict(doc))
        self.prof_id = doc['id']

    def conf_file(self, text):
        path = os.path.join(self.tmp, 'resq.conf')
        with open(path, 'w') as f:
            f.write(text)
        return path

    def parsed(self, path):
        """A command's ConfigOpts: the profiler's and resq-nova's options."""
        conf = cfg.ConfigOpts()
        prof_conf.register_opts(conf)
        nova_conf.register_opts(conf)
        conf(['--config-file', path], project='resq',
             default_config_files=[])
        return conf

    def run_main(self, main, *args):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(list(args))
        return rc, out.getvalue(), err.getvalue()

    def test_the_profiler_has_no_option_of_its_own(self):
        conf = self.parsed(self.conf_file('[resq]\nprofile_dir = %s\n'
                                          % self.store))
        self.assertEqual(self.store, conf.resq.profile_dir)
        self.assertNotIn('profile_dir', conf.resq_profiler)

    def test_the_deprecated_name_still_names_the_store(self):
        logs = self.useFixture(fixtures.FakeLogger(name='oslo_config.cfg'))
        # oslo.log reports a deprecation once a process: a test before this
        # one may have had it.
        self.useFixture(fixtures.MonkeyPatch(
            'oslo_log.versionutils._deprecated_messages_sent', {}))
        conf = self.parsed(self.conf_file('[resq_profiler]\nprofile_dir = '
                                          '%s\n' % self.store))
        self.assertEqual(self.store, conf.resq.profile_dir)
        self.assertIn('Option "profile_dir" from group "resq_profiler" is '
                      'deprecated. Use option "profile_dir" from group '
                      '"resq"', logs.output)

    def test_every_command_reads_the_one_option(self):
        slo_file = os.path.join(self.tmp, 'slo.json')
        with open(slo_file, 'w') as f:
            json.dump({'terms': [{
                'name': 'fw-a', 'profile': self.prof_id,
                'throughput_mpps': 0.5, 'latency_p95_us': 500}]}, f)
        for text in ('[resq]\nprofile_dir = %s\n',
                     '[resq_profiler]\nprofile_dir = %s\n'):
            path = self.conf_file(text % self.store)
            rc, out, err = self.run_main(profiler_cmd.main, '--config-file',
                                         path, 'list')
            self.assertEqual(0, rc, err)
            self.assertIn(self.prof_id, out)
            # resq-plan reads (and writes) the profiler's store.
            rc, out, err = self.run_main(plan_cmd.main, '--config-file',
                                         path, '--slo-file', slo_file,
                                         '--servers', '2')
            self.assertEqual(0, rc, err)
            self.assertIn('1 terms admitted', out)

    def test_upgrade_check_names_the_new_option(self):
        path = self.conf_file('[resq_profiler]\nprofile_dir = %s\n'
                              % self.store)
        findings = audit.audit([(path, audit.parse(path))],
                               audit.registered())
        self.assertEqual(['[resq_profiler] profile_dir in %s: renamed [resq] '
                          'profile_dir; it is still read under the old name '
                          'for now: rename it' % path],
                         [str(f) for f in findings])
