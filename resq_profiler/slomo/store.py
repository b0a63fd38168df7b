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
"""SLOMO model files kept beside their profiles in the profile store.

``<profile id>.slomo`` next to ``<profile id>.json``; written atomically
(the same temporary-file-and-rename as profiles) and validated on the way
in and out.
"""

import os

from oslo_log import log as logging

from resq_common import fileutils
from resq_common import jsonutils
from resq_common import profile as profile_mod
from resq_profiler import exception
from resq_profiler.slomo import document

LOG = logging.getLogger(__name__)
SUFFIX = '.slomo'
_TMP_PREFIX = '.resq-slomo-'


class ModelStore:
    """SLOMO models in the profile store's directory."""

    def __init__(self, directory):
        self.directory = os.path.abspath(directory)

    def path(self, profile_id):
        if (not profile_mod.ID_RE.match(profile_id)
                or profile_id.startswith('.')):
            raise exception.ProfileNotFound(profile_id=profile_id,
                                            store=self.directory)
        return os.path.join(self.directory, profile_id + SUFFIX)

    def put(self, doc):
        """Store a model document (sealing it); :returns: its path."""
        doc = document.seal(doc)
        text = document.Model(doc).to_json()
        # Never store what we cannot load.
        document.parse(text, source=doc['nf']['profile_id'])
        path = self.path(doc['nf']['profile_id'])
        try:
            os.makedirs(self.directory, exist_ok=True)
            fileutils.atomic_write(path, text, _TMP_PREFIX)
        except OSError as exc:
            raise exception.ProfileStoreError(
                store=self.directory, reason='cannot write %s: %s'
                % (path, exc.strerror))
        LOG.info('Stored SLOMO model of %s in %s', doc['nf']['profile_id'],
                 path)
        return path

    def get(self, profile_id, platform=None):
        """The validated model of ``profile_id``.

        :param platform: the platform dict it is for (checked when given).
        :raises document.InvalidModel: when missing, corrupt, of another
            version or trained for another platform.
        """
        path = self.path(profile_id)
        try:
            text = jsonutils.read_text(path, 16 * 1024 * 1024)
        except FileNotFoundError:
            raise document.InvalidModel(path, 'no such file; train one')
        except (OSError, ValueError) as exc:
            raise document.InvalidModel(path, 'cannot be read: %s' % exc)
        model = document.parse(text, source=path, platform=platform)
        if model.profile_id != profile_id:
            raise document.InvalidModel(
                path, 'it is the model of profile %r, not %r'
                % (model.profile_id, profile_id))
        return model

    def get_or_isolate(self, profile_id, platform=None):
        """The model, or ``None`` (isolation) with the reason logged."""
        try:
            return self.get(profile_id, platform)
        except (document.InvalidModel, exception.ProfileNotFound) as exc:
            LOG.warning('%s', exc)
            return None

    def delete(self, profile_id):
        try:
            os.unlink(self.path(profile_id))
        except FileNotFoundError:
            pass
