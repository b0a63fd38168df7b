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
"""A directory of profile documents, one ``<id>.json`` file each.

Writes are atomic: a document is written to a temporary file in the same
directory, flushed to disk and renamed over the old one, so a reader sees
the old profile or the new one, never half of either, and a crash leaves at
most a ``.tmp`` file that the next write or ``cleanup()`` removes.
"""

import contextlib
import os

from oslo_log import log as logging

from resq_common import fileutils
from resq_common import jsonutils
from resq_common import profile as profile_mod
from resq_profiler import exception

LOG = logging.getLogger(__name__)
_SUFFIX = '.json'
_TMP_PREFIX = '.resq-profile-'


def atomic_write(path, text, tmp_prefix=_TMP_PREFIX):
    """Write ``text`` to ``path`` atomically (see :mod:`resq_common`)."""
    fileutils.atomic_write(path, text, tmp_prefix)


def load_file(path):
    """Read and validate one profile document.

    :raises resq_profiler.exception.InvalidProfile: naming the file.
    """
    try:
        text = jsonutils.read_text(path, profile_mod.MAX_PROFILE_BYTES)
    except OSError as exc:
        raise exception.InvalidProfile(path, '(document)',
                                       'cannot be read: %s' % exc.strerror)
    except ValueError as exc:
        raise exception.InvalidProfile(path, '(document)', str(exc))
    return profile_mod.Profile.from_json(text, source=path)


class WatchedProfiles:
    """Profiles of one directory, each read again only when its file changes.

    For a caller that asks for the same profiles every pass (the agent):
    ``convert(profile)`` is kept with the file's modification time and size,
    so an unchanged file is neither read nor validated again. A profile
    that is missing or invalid gives None, and ``warn(reason)`` once until
    it reads again.
    """

    def __init__(self, directory, convert):
        self.store = ProfileStore(directory)
        self.convert = convert
        self._cache = {}          # id -> (file stamp, value or None)
        self._reported = set()

    def get(self, profile_id, warn):
        """``convert`` of profile ``profile_id``, or None (see the class)."""
        try:
            path = self.store.path(profile_id)
            st = os.stat(path)
        except (exception.ResQException, OSError) as exc:
            self._cache.pop(profile_id, None)
            self._warn(profile_id, warn, 'it is not in %s (%s)' % (
                self.store.directory, getattr(exc, 'strerror', None) or exc))
            return None
        stamp = (st.st_mtime_ns, st.st_size)
        cached = self._cache.get(profile_id)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        try:
            value = self.convert(load_file(path))
        except exception.ResQException as exc:
            self._warn(profile_id, warn, exc)
            value = None
        self._cache[profile_id] = (stamp, value)
        if value is not None:
            self._reported.discard(profile_id)
        return value

    def forget(self, profile_ids=None):
        """Read these profiles (all by default) again at the next call."""
        for pid in (list(self._cache) if profile_ids is None
                    else profile_ids):
            self._cache.pop(pid, None)
            self._reported.discard(pid)

    def _warn(self, profile_id, warn, reason):
        if profile_id not in self._reported:
            self._reported.add(profile_id)
            warn(reason)


class ProfileStore:
    """Profiles kept as JSON files in one directory."""

    def __init__(self, directory):
        self.directory = os.path.abspath(directory)

    def path(self, profile_id):
        """The file of profile ``profile_id`` (which may not exist)."""
        if (not profile_mod.ID_RE.match(profile_id)
                or profile_id.startswith('.')):
            raise exception.ProfileNotFound(profile_id=profile_id,
                                            store=self.directory)
        return os.path.join(self.directory, profile_id + _SUFFIX)

    def _ensure_dir(self):
        try:
            os.makedirs(self.directory, exist_ok=True)
        except OSError as exc:
            raise exception.ProfileStoreError(
                store=self.directory,
                reason='cannot create the directory (%s); set '
                '[resq] profile_dir to a writable place'
                % exc.strerror)

    def put(self, prof):
        """Store ``prof`` (replacing a profile with the same id)."""
        self._ensure_dir()
        # Round-trip through validation: never store what we cannot load.
        text = prof.to_json()
        profile_mod.Profile.from_json(text, source=prof.profile_id)
        path = self.path(prof.profile_id)
        try:
            atomic_write(path, text)
        except OSError as exc:
            raise exception.ProfileStoreError(
                store=self.directory, reason='cannot write %s: %s'
                % (path, exc.strerror))
        LOG.info('Stored profile %s in %s', prof.profile_id, path)
        return path

    def get(self, profile_id):
        path = self.path(profile_id)
        if not os.path.exists(path):
            raise exception.ProfileNotFound(profile_id=profile_id,
                                            store=self.directory)
        return load_file(path)

    def exists(self, profile_id):
        try:
            return os.path.exists(self.path(profile_id))
        except exception.ProfileNotFound:
            return False

    def delete(self, profile_id):
        path = self.path(profile_id)
        try:
            os.unlink(path)
        except FileNotFoundError:
            raise exception.ProfileNotFound(profile_id=profile_id,
                                            store=self.directory)

    def ids(self):
        if not os.path.isdir(self.directory):
            return []
        return sorted(name[:-len(_SUFFIX)]
                      for name in os.listdir(self.directory)
                      if name.endswith(_SUFFIX) and not name.startswith('.'))

    def list(self):
        """Every valid profile; invalid files are logged and skipped."""
        result = []
        for profile_id in self.ids():
            try:
                result.append(self.get(profile_id))
            except exception.InvalidProfile as exc:
                LOG.warning('Skipping invalid profile: %s', exc)
        return result

    def cleanup(self):
        """Remove temporary files a crashed writer left behind."""
        removed = []
        if os.path.isdir(self.directory):
            for name in os.listdir(self.directory):
                if name.startswith(_TMP_PREFIX) and name.endswith('.tmp'):
                    with contextlib.suppress(OSError):
                        os.unlink(os.path.join(self.directory, name))
                        removed.append(name)
        return removed
