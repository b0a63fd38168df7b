"""``resq-profiler upload`` and ``profile --upload`` against resq-api."""

import io
import json
import os
from unittest import mock

import fixtures

from resq_common import profile as profile_mod
from resq_profiler.cmd import profiler as profiler_cmd
from resq_profiler import store as store_mod
from tests import base
from tests.fixtures import resq_api
from tests.unit.resq_profiler import test_profile


class ProfilerUploadTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.api = self.useFixture(resq_api.ResQAPI())
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.store = os.path.join(self.dir, 'profiles')
        self.prof = profile_mod.Profile.from_dict(test_profile.make_doc())
        store_mod.ProfileStore(self.store).put(self.prof)

    def conf_file(self, persona=None):
        path = os.path.join(self.dir, 'profiler.conf')
        with open(path, 'w') as f:
            f.write('[resq]\nprofile_dir = %s\n' % self.store)
            if persona:
                f.write('[resq_api]\nauth_type = admin_token\nendpoint = %s\n'
                        'token = %s\n' % (self.api.endpoint,
                                          self.api.tokens[persona]))
        return path

    def run_main(self, *argv, persona='member_a'):
        out, err = io.StringIO(), io.StringIO()
        with mock.patch('sys.stdout', out), mock.patch('sys.stderr', err):
            rc = profiler_cmd.main(['--config-file', self.conf_file(persona)]
                                   + list(argv))
        return rc, out.getvalue(), err.getvalue()

    def test_upload_once_then_unchanged(self):
        pid = self.prof.profile_id
        rc, out, err = self.run_main('upload', pid)
        self.assertEqual(0, rc, err)
        self.assertIn('created %s in resq-api (private, generation 0)' % pid,
                      out)
        rc, out, err = self.run_main('upload', pid)
        self.assertEqual(0, rc, err)
        self.assertIn('unchanged %s' % pid, out)
        rec = self.api.client('member_a').get_profile_record(pid)
        self.assertEqual((0, 'p-a'), (rec['generation'], rec['project_id']))
        self.assertEqual(self.prof.to_dict(), rec['profile'])

    def test_public_needs_admin(self):
        rc, out, err = self.run_main('upload', '--public',
                                     self.prof.profile_id)
        self.assertEqual(1, rc)
        self.assertIn('resq:profiles:create_public', err)
        self.assertEqual([], self.api.client('admin').list_profiles())
        rc, out, err = self.run_main('upload', '--public',
                                     self.prof.profile_id, persona='admin')
        self.assertEqual(0, rc, err)
        self.assertEqual(['public'], [p['visibility'] for p in
                                      self.api.client('member_b')
                                      .list_profiles()])

    def test_a_bad_file_sends_nothing(self):
        bad = os.path.join(self.dir, 'bad.json')
        doc = test_profile.make_doc()
        del doc['latency']
        with open(bad, 'w') as f:
            json.dump(doc, f)
        rc, out, err = self.run_main('upload', self.prof.profile_id, bad)
        self.assertEqual(1, rc)
        self.assertIn('latency', err)
        self.assertEqual([], self.api.client('admin').list_profiles())

    def test_without_resq_api_says_what_to_configure(self):
        rc, out, err = self.run_main('upload', self.prof.profile_id,
                                     persona=None)
        self.assertEqual(1, rc)
        self.assertIn('[resq_api]', err)
