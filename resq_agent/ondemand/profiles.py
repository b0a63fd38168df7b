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
"""Throughput-vs-ways curves of on-demand NFs from their profiles.

The local scheduler shapes an NF's miss-ratio curve from its profile when
it has one (:func:`.mrc.curve_for`). The profiles are the documents
``resq-profiler`` writes, ``<profile id>.json``, read from ``[resq_agent]
ondemand_profile_dir`` (else from ``ondemand_slomo_dir``: the SLOMO models
sit beside their profiles in the profile store). An NF's flavor names its
profile (``resq:profile``).

Nothing remote: the layout pass reads local files only. A document is
read again only when its file changes (modification time and size). A
profile that is missing, unreadable or invalid (the profile schema holds
two or more positive throughput points) gives no curve; the NF's curve is
then fitted to its readings, and the reason is logged once per profile
until it is fixed.
"""

import os

from oslo_log import log as logging

from resq_profiler import exception
from resq_profiler import store as store_mod

LOG = logging.getLogger(__name__)


class ProfileCurves:
    """``nf -> [(ways, Mpps)]`` or None (the scheduler's ``profiles``)."""

    def __init__(self, directory):
        self.store = store_mod.ProfileStore(directory)
        self._cache = {}          # id -> (file stamp, points or None)
        self._reported = set()

    def __call__(self, nf):
        """The throughput curve of ``nf`` (:class:`.model.NF`), or None."""
        profile_id = nf.profile
        if not profile_id:
            return None
        try:
            path = self.store.path(profile_id)
            st = os.stat(path)
        except (exception.ResQException, OSError) as exc:
            self._cache.pop(profile_id, None)
            self._report(profile_id, nf.uuid, 'it is not in %s (%s)'
                         % (self.store.directory,
                            getattr(exc, 'strerror', None) or exc))
            return None
        stamp = (st.st_mtime_ns, st.st_size)
        cached = self._cache.get(profile_id)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        points = self._load(profile_id, nf.uuid, path)
        self._cache[profile_id] = (stamp, points)
        if points is not None:
            self._reported.discard(profile_id)
        return points

    def _load(self, profile_id, uuid, path):
        try:
            prof = store_mod.load_file(path)
        except exception.ResQException as exc:
            self._report(profile_id, uuid, exc)
            return None
        # The schema holds two or more positive points.
        return [(float(w), float(t)) for w, t in prof.throughput]

    def forget(self, profile_ids=None):
        """Read these profiles (all by default) again at the next call."""
        for pid in (list(self._cache) if profile_ids is None
                    else profile_ids):
            self._cache.pop(pid, None)
            self._reported.discard(pid)

    def _report(self, profile_id, uuid, reason):
        if profile_id in self._reported:
            return
        self._reported.add(profile_id)
        LOG.warning('On-demand NF %s: no miss-ratio curve from profile %s: '
                    '%s; its curve is fitted to its CMT/MBM readings '
                    'instead', uuid, profile_id, reason)
