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
"""The base exception of every resq-nova package."""


class ResQException(Exception):
    """Base of every resq-nova exception.

    Subclasses set ``msg_fmt``; keyword arguments fill it in, so the message
    always names the thing that is wrong and what would fix it.
    """

    msg_fmt = 'An unknown error occurred.'

    def __init__(self, message=None, **kwargs):
        self.kwargs = kwargs
        if message is None:
            message = self.msg_fmt % kwargs
        self.message = message
        super().__init__(message)


class ResctrlError(ResQException):
    """A resctrl tree, group, mask or value that resq-nova refuses."""

    msg_fmt = '%(reason)s'


class InvalidCpuList(ResctrlError, ValueError):
    """Text that is not a CPU list (``0-3,8``): sysfs, resctrl, libvirt."""


class MonitoringUnavailable(ResctrlError):
    """No L3 monitoring (CMT/MBM) for a monitoring group.

    No ``info/L3_MON`` or no ``mon_groups`` directory, or no RMID left.
    """


class RmidsExhausted(MonitoringUnavailable):
    """Every RMID (``info/L3_MON/num_rmids``) is in use or in limbo."""


# The profile and measurement errors: raised by the profiler, and by the
# clients and extra-spec parsing here on the floor, which every package
# may import (resq_profiler.exception re-exports them).
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
