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
"""Deprecated: the scheduler plugins' paths before the regrouping.

The filter and the weigher moved to :mod:`resq_nova.nova.scheduler`. A
nova.conf written for the previous layout names
``resq_nova.scheduler.filters.ResQFilter`` (``[filter_scheduler]
available_filters``) and ``resq_nova.scheduler.weights.ResQWeigher``
(``weight_classes``); these modules keep such a file working for one
release: their classes are the new ones, and each logs once, when
nova-scheduler makes it, a deprecation warning naming the path to write
instead. They are removed in the next release.
"""

from oslo_log import log as logging
from oslo_log import versionutils

LOG = logging.getLogger(__name__)


def warn_moved(old, new, option):
    """Log once per process that ``old`` is a deprecated alias of ``new``.

    Through :func:`oslo_log.versionutils.report_deprecated_feature`, as
    Nova reports its deprecations: a warning (an error, and an exception,
    with ``[DEFAULT] fatal_deprecations``).
    """
    versionutils.report_deprecated_feature(
        LOG, '%(old)s is a deprecated alias of %(new)s, kept for one '
        'release: write %(new)s in nova.conf [filter_scheduler] '
        '%(option)s. The alias is removed in the next resq-nova release.',
        {'old': old, 'new': new, 'option': option})
