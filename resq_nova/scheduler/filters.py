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
"""Deprecated alias: :class:`resq_nova.nova.scheduler.filters.ResQFilter`.

Kept for one release for nova.conf files written before the regrouping;
see :mod:`resq_nova.scheduler`.
"""

from resq_nova.nova.scheduler import filters
from resq_nova import scheduler

OLD_PATH = 'resq_nova.scheduler.filters.ResQFilter'
NEW_PATH = 'resq_nova.nova.scheduler.filters.ResQFilter'


class ResQFilter(filters.ResQFilter):
    """The ResQ filter under its old path; logs a deprecation warning.

    Nova enables filters by class name, so the alias keeps the name
    ``ResQFilter``: ``enabled_filters`` needs no change.
    """

    def __init__(self):
        scheduler.warn_moved(OLD_PATH, NEW_PATH, 'available_filters')
        super().__init__()
