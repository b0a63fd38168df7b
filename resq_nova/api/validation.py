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
"""The checks every request passes before a handler or the database.

The path (UTF-8, no control characters), the ids in it (the lengths and
characters of their columns, UUIDs where they are one), the ``Accept``
header (406 unless JSON is acceptable, as Placement answers) and the
``Content-Type`` of a body (415 unless JSON). Strings and integers that
reach the database are bounded here and in the schemas, so what the
database cannot hold is a 400, never a 500.
"""

import re

from oslo_utils import uuidutils

from resq_nova.api import errors

JSON = 'application/json'
# sa.Integer on every backend: PostgreSQL refuses what exceeds 32 bits.
INT32_MAX = 2 ** 31 - 1
# C0 controls, DEL and the C1 controls: never part of an id or a name.
CONTROL = re.compile('[\x00-\x1f\x7f-\x9f]')
# What no database column can hold: NUL (PostgreSQL refuses it in text)
# and lone surrogates (not encodable as UTF-8).
UNSTORABLE = re.compile('[\x00\ud800-\udfff]')
ID_CHARS = re.compile(r'[A-Za-z0-9][A-Za-z0-9_.-]*\Z')
HOST_CHARS = re.compile(r'[A-Za-z0-9][A-Za-z0-9_.:-]*\Z')

ID_RULE = ('letters, digits, "_", "." or "-", starting with a letter or '
           'digit')
HOST_RULE = ('letters, digits, "_", ".", ":" or "-", starting with a '
             'letter or digit')
# Path variable -> (longest, characters (None: a UUID), what they may be).
# The lengths are those of the columns in resq_nova/api/db/models.py.
PATH_IDS = {
    'profile_id': (128, ID_CHARS, ID_RULE),
    'id': (128, ID_CHARS, ID_RULE),
    'plan_id': (128, ID_CHARS, ID_RULE),
    'hostname': (255, HOST_CHARS, HOST_RULE),
    'uuid': (36, None, None),
    'server_uuid': (36, None, None),
    'index': (6, re.compile(r'[0-9]+\Z'), 'digits'),
}


def path_error(detail):
    return errors.BadRequest(detail, code='resq.path.invalid')


def check_path(req):
    """The path as text: UTF-8 without control characters.

    :raises resq_nova.api.errors.BadRequest: (``resq.path.invalid``).
    """
    raw = req.environ.get('PATH_INFO', '')
    try:
        text = raw.encode('latin-1').decode('utf-8')
    except UnicodeError:
        raise path_error('the path is not UTF-8 text; percent-encode the '
                         'UTF-8 bytes of each path segment')
    found = CONTROL.search(text)
    if found:
        raise path_error('the path holds control character U+%04X; ids '
                         'never do, check how the URL was built'
                         % ord(found.group()))
    return text


def check_path_id(name, value):
    """One path variable against :data:`PATH_IDS`.

    :raises resq_nova.api.errors.BadRequest: (``resq.path.invalid``)
        naming the variable and what it may be.
    """
    longest, chars, rule = PATH_IDS.get(name, (255, None, None))
    if len(value) > longest:
        raise path_error('path %s has %d characters, more than the %d it '
                         'may have' % (name, len(value), longest))
    if name in PATH_IDS and chars is None:
        if not uuidutils.is_uuid_like(value):
            raise path_error('path %s %r is not a UUID' % (name, value))
    elif chars is not None and not chars.match(value):
        raise path_error('path %s %r may hold only %s' % (name, value, rule))


def check_path_ids(urlvars):
    for name, value in sorted(urlvars.items()):
        check_path_id(name, value)


def check_accept(req):
    """406 unless an ``Accept`` header, when sent, admits JSON."""
    if req.accept and not req.accept.acceptable_offers([JSON]):
        raise errors.NotAcceptable(
            'resq-api answers only %s; the Accept header %r excludes it'
            % (JSON, req.headers.get('Accept')),
            code='resq.not_acceptable')


def has_body(req):
    if req.content_length:
        return True
    return 'chunked' in req.headers.get('Transfer-Encoding', '').lower()


def check_content_type(req):
    """415 unless a body a request carries is JSON."""
    if req.method not in ('POST', 'PUT', 'PATCH') or not has_body(req):
        return
    if req.content_type != JSON:
        raise errors.UnsupportedMediaType(
            'the body is of media type %s; resq-api takes %s (send '
            'Content-Type: %s)' % (req.content_type or 'None', JSON, JSON),
            code='resq.content_type')


def check_request(req, dispatcher):
    """Every check of this module; the handler of the request.

    Order: the path text, the route (404, 405), the path ids, ``Accept``
    and the body's ``Content-Type``.
    """
    check_path(req)
    func = dispatcher.find(req)
    check_path_ids(req.urlvars)
    check_accept(req)
    check_content_type(req)
    return func


# The widest integer column (and what JSON readers beyond Python keep).
INT64_MIN, INT64_MAX = -2 ** 63, 2 ** 63 - 1


def _scalar_problem(value):
    if isinstance(value, str) and UNSTORABLE.search(value):
        return 'holds NUL or a lone UTF-16 surrogate, which no text can store'
    if isinstance(value, int) and not isinstance(value, bool) and not (
            INT64_MIN <= value <= INT64_MAX):
        return 'is an integer outside the 64-bit range no field exceeds'
    return None


def unstorable(value, where='(top)'):
    """Where in a decoded JSON document a value cannot be stored, and why.

    Strings (and keys) holding NUL or a lone surrogate, and integers
    outside 64 bits, are refused wherever they are: no column and no
    document of resq-api holds them.

    :returns: ``(dotted path, reason)`` of the first such value; None
        when there is none.
    """
    if isinstance(value, list):
        items = enumerate(value)
    elif isinstance(value, dict):
        items = value.items()
    else:
        problem = _scalar_problem(value)
        return (where, problem) if problem else None
    for key, item in items:
        here = '%s.%s' % (where, key) if where != '(top)' else str(key)
        problem = _scalar_problem(key)
        found = (here, problem) if problem else unstorable(item, here)
        if found is not None:
            return found
    return None


def location(req, resp, body_keys):
    """The URL of what a 201 created, for its ``Location`` header.

    A PUT created the resource at its own URL; a POST to a collection
    created ``<collection>/<key>``, the key named by ``body_keys`` (the
    collection path -> the field of the created record).

    :returns: None when the URL cannot be told.
    """
    url = req.application_url + req.path_info.rstrip('/')
    if req.method == 'PUT':
        return url
    key = body_keys.get(req.path_info.rstrip('/'))
    try:
        body = resp.json_body if key else None
    except ValueError:
        return None
    ident = body.get(key) if isinstance(body, dict) else None
    if not isinstance(ident, str):
        return None
    return '%s/%s' % (url, ident)
