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
"""Exceptions of the profiler, each with a message an operator can act on.

They live in :mod:`resq_common.exception`, the floor every package may
import (the clients and extra-spec parsing there raise them too); this
module names them for the code that reaches them through the profiler.
"""

from resq_common import exception

ResQException = exception.ResQException
UnknownNF = exception.UnknownNF
InvalidProfile = exception.InvalidProfile
ProfileNotFound = exception.ProfileNotFound
ProfileStoreError = exception.ProfileStoreError
TargetUnreachable = exception.TargetUnreachable
MeasurementError = exception.MeasurementError
ResctrlError = exception.ResctrlError
