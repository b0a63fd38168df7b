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
"""What the objects raise; the API turns each into its status."""

from resq_common import exception


class ObjectError(exception.ResQException):
    status = 500
    code = 'resq.error'


class NotFound(ObjectError):
    status = 404
    code = 'resq.not_found'


class ProfileNotFound(NotFound):
    msg_fmt = ('no profile %(id)s that you can see; list them with '
               '"openstack resq profile list"')


class ProfileIdTaken(NotFound):
    msg_fmt = ('no profile %(id)s that you can see, and profile ids are '
               'global: choose another id (one that starts with your '
               'project\'s name, say)')


class SloTermNotFound(NotFound):
    msg_fmt = ('no SLO term %(id)s in your project; list them with '
               '"openstack resq slo list"')


class SnapshotNotFound(NotFound):
    msg_fmt = 'no snapshot %(id)s'


class PlanNotFound(NotFound):
    msg_fmt = ('no plan %(id)s; list them with "openstack resq plan list"')


class ActionNotFound(NotFound):
    msg_fmt = 'plan %(id)s has no action %(index)s'


class IsolationNotFound(NotFound):
    msg_fmt = 'no isolation status was reported for server %(id)s'


class HostNotFound(NotFound):
    msg_fmt = 'no agent has reported host %(id)s'


class AdmissionOnly(ObjectError):
    """What only the admission service changes, asked by another caller."""
    status = 403
    code = 'resq.slo_term.admit'
    msg_fmt = ('only the admission service (policy resq:slo_terms:admit) '
               'changes the %(what)s of a term that is %(status)s (release '
               'it and record a new one)')


class OverLimit(ObjectError):
    """A project already holds as many of a kind as it may (Nova's 403)."""
    status = 403
    code = 'resq.over_limit'
    msg_fmt = ('project %(project)s already has %(count)d %(what)s, its '
               'limit ([api] %(option)s = %(limit)d); delete some, or ask '
               'the operator to raise the limit')


class NotOwner(ObjectError):
    """A replacement of a profile another project (or nobody) owns."""
    status = 403
    code = 'resq.policy'
    msg_fmt = ('profile %(id)s is not your project\'s; only its owner or an '
               'admin replaces it')


class Conflict(ObjectError):
    status = 409
    code = 'resq.conflict'


class ConcurrentUpdate(Conflict):
    code = 'resq.concurrent_update'
    msg_fmt = ('%(what)s changed since you read it (generation %(expected)s, '
               'now %(actual)s); read it again and retry with the current '
               'generation')


class AlreadyExists(Conflict):
    code = 'resq.duplicate'
    msg_fmt = '%(what)s already exists'


class ProfileExists(AlreadyExists):
    msg_fmt = ('profile %(id)s already exists (generation %(generation)d); '
               '%(todo)s')


class ProfileInUse(Conflict):
    code = 'resq.profile.in_use'
    msg_fmt = ('profile %(id)s is used by SLO terms %(terms)s; release them '
               '(status released) before deleting the profile')


class ProfileOwned(Conflict):
    code = 'resq.profile.owned'
    msg_fmt = ('profile %(id)s belongs to project %(owner)s (a %(visibility)s '
               'profile, generation %(generation)d); a public profile '
               'belongs to no project, and publishing this one would leave '
               'it project %(owner)s\'s to rewrite or make private again, '
               'so nothing was changed. Delete it (DELETE /profiles/%(id)s '
               'as an admin, once no SLO term names it) and upload yours, or '
               'upload yours under another id')


class ProfileGone(Conflict):
    code = 'resq.slo_term.profile_gone'
    msg_fmt = ('SLO term %(term)s cannot be admitted: its profile %(id)s is '
               'gone (or no longer visible to its project); upload the '
               'profile again or record a new term')


class SnapshotInUse(Conflict):
    code = 'resq.snapshot.in_use'
    msg_fmt = ('snapshot %(id)s is the snapshot of plans %(plans)s; it goes '
               'with them (resq-manage db prune)')


class SnapshotMissing(ObjectError):
    status = 400
    code = 'resq.plan.snapshot'
    msg_fmt = ('no snapshot %(id)s: a plan names the snapshot it was made '
               'from; store the snapshot first (POST /snapshots)')


class InvalidState(Conflict):
    code = 'resq.invalid_state'
    msg_fmt = '%(what)s is %(state)s: %(reason)s'
