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

from oslo_log import log as logging

from resq_profiler import store as store_mod

LOG = logging.getLogger(__name__)


class ProfileCurves:
    """``nf -> [(ways, Mpps)]`` or None (the scheduler's ``profiles``)."""

    def __init__(self, directory):
        # The schema holds two or more positive points.
        self.profiles = store_mod.WatchedProfiles(
            directory, lambda prof: [(float(w), float(t))
                                     for w, t in prof.throughput])
        self.store = self.profiles.store

    def __call__(self, nf):
        """The throughput curve of ``nf`` (:class:`.model.NF`), or None."""
        if not nf.profile:
            return None
        return self.profiles.get(nf.profile, lambda reason: LOG.warning(
            'On-demand NF %s: no miss-ratio curve from profile %s: %s; its '
            'curve is fitted to its CMT/MBM readings instead', nf.uuid,
            nf.profile, reason))

    def forget(self, profile_ids=None):
        """Read these profiles (all by default) again at the next call."""
        self.profiles.forget(profile_ids)
