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
"""Exceptions of the profiler, each with a message an operator can act on."""

from resq_common import exception


# The base lives in resq_common, which every package may import; it is
# re-exported here for the modules that name it through the profiler.
ResQException = exception.ResQException


class UnknownNF(ResQException):
    msg_fmt = 'Unknown NF %(name)r; the catalog has: %(known)s.'


class InvalidProfile(ResQException):
    """A profile document failed validation.

    ``source`` is the file (or ``<memory>``) and ``field`` the JSON path of
    the offending value.
    """

    msg_fmt = 'Invalid profile %(source)s: field %(field)s: %(reason)s'

    def __init__(self, source, field, reason):
        super().__init__(source=source, field=field, reason=reason)
        self.source = source
        self.field = field
        self.reason = reason


class ProfileNotFound(ResQException):
    msg_fmt = ('No profile %(profile_id)r in the profile store %(store)s; '
               'list the store with "resq-profiler list" or create it with '
               '"resq-profiler profile".')


class ProfileStoreError(ResQException):
    msg_fmt = 'Profile store %(store)s: %(reason)s'


class TargetUnreachable(ResQException):
    msg_fmt = '%(reason)s'


class MeasurementError(ResQException):
    msg_fmt = 'Measurement failed: %(reason)s'


ResctrlError = exception.ResctrlError
