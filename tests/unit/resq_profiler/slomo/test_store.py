import json
import os
from unittest import mock

from resq_profiler import exception
from resq_profiler import nfmodel
from resq_profiler.slomo import document
from resq_profiler.slomo import store as store_mod
from resq_profiler import store as profile_store
from tests import base
from tests.unit.resq_profiler.slomo import util

PLATFORM = nfmodel.Platform().as_dict()


class ModelStoreTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = os.path.join(self.tmp, 'profiles')
        self.store = store_mod.ModelStore(self.dir)
        self.doc = util.trained_doc('Firewall')
        self.pid = self.doc['nf']['profile_id']

    def _write(self, text):
        os.makedirs(self.dir, exist_ok=True)
        with open(os.path.join(self.dir, self.pid + '.slomo'), 'w') as f:
            f.write(text)

    def _refused(self, text=None, platform=PLATFORM):
        if text is not None:
            self._write(text)
        exc = self.assertRaises(document.InvalidModel, self.store.get,
                                self.pid, platform)
        self.assertIn(os.path.join(self.dir, self.pid + '.slomo'), str(exc))
        self.assertIn('own cache partition', str(exc))
        # The NF falls back to isolation: no model, the reason logged.
        self.assertIsNone(self.store.get_or_isolate(self.pid, platform))
        return str(exc)

    def test_round_trip_beside_the_profile(self):
        path = self.store.put(self.doc)
        self.assertEqual(os.path.join(self.dir, self.pid + '.slomo'), path)
        model = self.store.get(self.pid, PLATFORM)
        self.assertEqual('Firewall', model.name)
        self.assertEqual(util.model('Firewall').predict_mpps(
            [model.contentiousness] * 3),
            model.predict_mpps([model.contentiousness] * 3))
        # The profile store does not mistake it for a profile.
        self.assertEqual([], profile_store.ProfileStore(self.dir).ids())
        self.assertEqual([], [n for n in os.listdir(self.dir)
                              if n.endswith('.tmp')])
        # Idempotent: storing it again leaves the same file.
        with open(path) as f:
            first = f.read()
        self.store.put(self.doc)
        with open(path) as f:
            self.assertEqual(first, f.read())

    def test_corrupt_files_are_refused(self):
        text = json.dumps(self.doc)
        self.assertIn('not valid JSON', self._refused(text[:len(text) // 2]))
        self.assertIn('not valid JSON', self._refused('\x00\x01garbage'))
        self.assertIn('not a JSON object', self._refused('[1, 2]'))
        edited = dict(self.doc, solo_mpps=self.doc['solo_mpps'] * 2)
        self.assertIn('checksum mismatch', self._refused(json.dumps(edited)))
        broken = json.loads(text)
        broken['ensemble']['trees'][0]['left'][0] = 0
        self.assertIn('fresh node', self._refused(json.dumps(
            document.seal(broken))))
        nan = text.replace('"solo_mpps": ', '"solo_mpps": NaN, "x": ', 1)
        self.assertIn('not valid JSON', self._refused(nan))
        missing = document.seal({k: v for k, v in self.doc.items()
                                 if k != 'ensemble'})
        self.assertIn("'ensemble' is a required property",
                      self._refused(json.dumps(missing)))

    def test_other_versions_and_formats_are_refused(self):
        newer = document.seal(dict(self.doc, format_version=3))
        msg = self._refused(json.dumps(newer))
        self.assertIn('format version 3 is not supported', msg)
        self.assertIn('reads versions 1, 2', msg)
        # A version-2 body claiming version 1: its features do not match.
        older = document.seal(dict(self.doc, format_version=1))
        self.assertIn('format version 1 uses',
                      self._refused(json.dumps(older)))
        other = dict(self.doc, format='pickle')
        self.assertIn('not a SLOMO model document',
                      self._refused(json.dumps(other)))
        fewer = dict(self.doc, features=self.doc['features'][:-1])
        self.assertIn('trained on features',
                      self._refused(json.dumps(document.seal(fewer))))

    def test_other_platforms_are_refused(self):
        self.store.put(self.doc)
        other = dict(PLATFORM, llc_ways=11,
                     cpu_model='Intel(R) Xeon(R) Gold 6130')
        msg = self._refused(platform=other)
        self.assertIn('trained for another platform', msg)
        self.assertIn("llc_ways 20 (here 11)", msg)
        self.assertRaises(document.PlatformMismatch, self.store.get,
                          self.pid, other)
        # Without a platform to check, it loads.
        self.assertEqual('Firewall', self.store.get(self.pid).name)

    def test_missing_and_misnamed(self):
        self.assertIn('no such file', self._refused())
        self.store.put(self.doc)
        os.rename(os.path.join(self.dir, self.pid + '.slomo'),
                  os.path.join(self.dir, 'other.slomo'))
        exc = self.assertRaises(document.InvalidModel, self.store.get,
                                'other')
        self.assertIn("model of profile 'firewall-64B'", str(exc))
        self.assertRaises(exception.ProfileNotFound, self.store.path,
                          '../etc')
        self.assertIsNone(self.store.get_or_isolate('../etc'))

    def test_failed_write_keeps_old_model_and_leaves_no_temp(self):
        self.store.put(self.doc)
        changed = dict(self.doc, solo_mpps=1.0)
        with mock.patch('os.replace', side_effect=OSError(28, 'No space')):
            exc = self.assertRaises(exception.ProfileStoreError,
                                    self.store.put, changed)
        self.assertIn('No space', str(exc))
        self.assertEqual(self.doc['solo_mpps'],
                         self.store.get(self.pid).solo_mpps)
        self.assertEqual([], [n for n in os.listdir(self.dir)
                              if n.endswith('.tmp')])

    def test_refuses_to_store_an_invalid_document(self):
        bad = dict(self.doc, solo_mpps=-1.0)
        self.assertRaises(document.InvalidModel, self.store.put, bad)
        self.assertFalse(os.path.exists(self.store.path(self.pid)))
