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
"""Push a profile document to resq-api, once.

``resq-profiler upload`` and ``openstack resq profile upload`` both call
:func:`upload`. The same document (and visibility) as the stored one sends
nothing, so the profile's generation does not move; a changed document
replaces the stored one at its current generation (``PUT`` with
``generation``; the API answers 409 if someone changed it meanwhile).
"""

from resq_common.clients import resq as resq_client

PUBLIC = 'public'
PRIVATE = 'private'
CREATED = 'created'
REPLACED = 'replaced'
UNCHANGED = 'unchanged'


def upload(client, prof, visibility=None):
    """Create or replace ``prof`` in resq-api unless it is there already.

    :param client: a :class:`resq_common.clients.resq.ResQClient`.
    :param prof: a :class:`resq_common.profile.Profile` (validated).
    :param visibility: ``public``, ``private`` or None (a stored profile
        keeps its own; a new one is private).
    :returns: ``(record, what)``: the stored record and one of
        ``created``, ``replaced``, ``unchanged``.
    :raises resq_common.clients.resq.Conflict: changed meanwhile.
    :raises resq_common.clients.resq.Forbidden: ``public`` without admin.
    """
    document = prof.to_dict()
    try:
        current = client.get_profile_record(prof.profile_id)
    except resq_client.NotFound:
        current = None
    if current is None:
        record = client.put_profile(document, visibility or PRIVATE)
        return record, CREATED
    wanted = visibility or current.get('visibility') or PRIVATE
    if current.get('profile') == document and \
            current.get('visibility') == wanted:
        return current, UNCHANGED
    record = client.put_profile(document, wanted, current['generation'])
    return record, REPLACED
