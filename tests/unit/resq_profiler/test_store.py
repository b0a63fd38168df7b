import os
from unittest import mock

from resq_common import profile as profile_mod
from resq_profiler import exception
from resq_profiler import store as store_mod
from tests import base
from tests.unit.resq_profiler import test_profile


class ProfileStoreTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = os.path.join(self.tmp, 'profiles')
        self.store = store_mod.ProfileStore(self.dir)
        self.prof = profile_mod.Profile.from_dict(test_profile.make_doc())

    def test_put_get_list_delete(self):
        self.assertEqual([], self.store.list())
        path = self.store.put(self.prof)
        self.assertEqual(os.path.join(self.dir, self.prof.profile_id
                                      + '.json'), path)
        self.assertEqual(self.prof, self.store.get(self.prof.profile_id))
        self.assertEqual([self.prof.profile_id], self.store.ids())
        self.assertTrue(self.store.exists(self.prof.profile_id))
        self.store.delete(self.prof.profile_id)
        self.assertRaises(exception.ProfileNotFound, self.store.get,
                          self.prof.profile_id)
        self.assertRaises(exception.ProfileNotFound, self.store.delete,
                          self.prof.profile_id)

    def test_failed_write_keeps_old_profile_and_leaves_no_temp(self):
        self.store.put(self.prof)
        changed = profile_mod.Profile.from_dict(test_profile.make_doc(
            **{'traffic.flows': 5}))
        with mock.patch('os.replace', side_effect=OSError(28, 'No space')):
            exc = self.assertRaises(exception.ProfileStoreError,
                                    self.store.put, changed)
        self.assertIn('No space', str(exc))
        self.assertEqual(self.prof, self.store.get(self.prof.profile_id))
        self.assertEqual([self.prof.profile_id + '.json'],
                         os.listdir(self.dir))

    def test_cleanup_removes_crash_leftovers(self):
        self.store.put(self.prof)
        leftover = os.path.join(self.dir, '.resq-profile-abc.tmp')
        open(leftover, 'w').close()
        self.assertEqual(['.resq-profile-abc.tmp'], self.store.cleanup())
        self.assertFalse(os.path.exists(leftover))
        self.assertEqual([self.prof.profile_id], self.store.ids())

    def test_invalid_file_is_named_and_skipped_by_list(self):
        self.store.put(self.prof)
        bad = os.path.join(self.dir, 'broken.json')
        with open(bad, 'w') as f:
            f.write('{"schema_version": 1}')
        exc = self.assertRaises(exception.InvalidProfile, self.store.get,
                                'broken')
        self.assertIn(bad, str(exc))
        self.assertEqual([self.prof], self.store.list())

    def test_ids_cannot_escape_the_store(self):
        for bad in ('../x', '.hidden', 'a/b', ''):
            self.assertRaises(exception.ProfileNotFound, self.store.get, bad)
            self.assertFalse(self.store.exists(bad))

    def test_unwritable_directory(self):
        blocker = os.path.join(self.tmp, 'file')
        open(blocker, 'w').close()
        store = store_mod.ProfileStore(os.path.join(blocker, 'sub'))
        exc = self.assertRaises(exception.ProfileStoreError, store.put,
                                self.prof)
        self.assertIn('profile_dir', str(exc))
