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
"""Request bodies and query strings against their schemas; pages; ETags."""

import json
from urllib import parse

import jsonschema

from resq_common import jsonutils
from resq_nova.api import errors
from resq_nova.api import validation


def extract_json(req, schema, max_bytes):
    """The request's JSON body, validated; what is wrong named if not.

    Parsed by :func:`resq_common.jsonutils.loads`, which refuses documents
    nested deeper than it allows before decoding them.

    :raises resq_nova.api.errors.TooLarge: over ``max_bytes``.
    :raises resq_nova.api.errors.BadRequest: not JSON, nested too deeply,
        NaN or infinity, a string no database can store (NUL, a lone
        surrogate), an integer beyond 64 bits, or not what ``schema``
        allows.
    """
    if req.content_length is not None and req.content_length < 0:
        raise errors.BadRequest(
            'Content-Length is %d; send the body\'s length in bytes'
            % req.content_length, code='resq.body.invalid')
    if req.content_length is not None and req.content_length > max_bytes:
        raise errors.TooLarge(
            'the request body has %d bytes, more than [api] '
            'max_request_body_size (%d); send a smaller document or ask '
            'the operator to raise the limit'
            % (req.content_length, max_bytes))
    try:
        raw = req.body_file.read(max_bytes + 1)
    except OSError:
        # uwsgi: the client stopped sending (its socket timeout).
        raw = None
    if raw is None or (req.content_length is not None and
                       len(raw) < req.content_length):
        raise errors.BadRequest(
            'the request body ended before its Content-Length (%s bytes) '
            'was sent; send the whole body' % req.content_length,
            code='resq.body.incomplete')
    if len(raw) > max_bytes:
        raise errors.TooLarge(
            'the request body is longer than [api] max_request_body_size '
            '(%d bytes); send a smaller document' % max_bytes)
    try:
        body = jsonutils.loads(raw.decode('utf-8'), max_bytes=max_bytes)
    except (ValueError, UnicodeDecodeError) as exc:
        raise errors.BadRequest('the body is not valid JSON (%s); send a '
                                'JSON document with Content-Type '
                                'application/json' % exc,
                                code='resq.body.invalid_json')
    _check_values(body, max_values(max_bytes))
    found = validation.unstorable(body)
    if found is not None:
        raise errors.BadRequest('body field %s %s; remove or correct it'
                                % found, code='resq.body.invalid')
    validate(body, schema, 'body')
    return body


# The densest body resq-api takes spends about 18 bytes on each JSON value
# (a plan's moves; a term's server ids take 39); a body of bare "[]," or
# "0," spends 2 or 3, and each value costs every later read of it.
BYTES_PER_VALUE = 16
MIN_VALUES = 50000


def max_values(max_bytes):
    """How many JSON values a body of at most ``max_bytes`` may hold."""
    return max(MIN_VALUES, max_bytes // BYTES_PER_VALUE)


def _check_values(body, cap):
    """Refuse a body of more than ``cap`` JSON values.

    Arrays, objects, strings, numbers, booleans and nulls each count one,
    counted without recursion.

    :raises resq_nova.api.errors.BadRequest: ``resq.body.too_many_values``.
    """
    count = 0
    stack = [body]
    while stack:
        value = stack.pop()
        count += 1
        if count > cap:
            raise errors.BadRequest(
                'the body holds more than %d JSON values (arrays, objects, '
                'strings, numbers); no document resq-api takes has that '
                'many for its size: send the document itself, without '
                'padding' % cap, code='resq.body.too_many_values')
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)


def _unique_items(validator, unique, instance, schema):
    # jsonschema's own check compares every pair when the items cannot be
    # sorted (mixed types), and names the whole list in its message: a
    # list of 20,000 held a worker for minutes. One pass over a set here.
    if not unique or not validator.is_type(instance, 'array'):
        return
    seen = set()
    for index, item in enumerate(instance):
        key = _canonical(item)
        if key in seen:
            yield jsonschema.ValidationError(
                'item %d repeats an earlier item (%s); each may be given '
                'once' % (index, _short(item)))
            return
        seen.add(key)


def _canonical(item):
    """A hashable key equal for items JSON Schema calls equal."""
    if isinstance(item, bool):
        return ('bool', item)
    if isinstance(item, (int, float)):
        return ('number', item)      # 1 == 1.0, as in JSON Schema
    if isinstance(item, str) or item is None:
        return ('value', item)
    return ('json', json.dumps(item, sort_keys=True))


def _short(item):
    text = json.dumps(item)
    return text if len(text) <= 80 else text[:77] + '...'


def _strict_integer(checker, instance):
    # JSON Schema's "integer" is any number with a zero fractional part
    # (1.0, 1e0); an id or a count is sent as an integer, or refused.
    return isinstance(instance, int) and not isinstance(instance, bool)


# Draft 2020-12 with "integer" meaning a JSON integer literal.
# uniqueItems checked in one pass (:func:`_unique_items`).
Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    validators={'uniqueItems': _unique_items},
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
        'integer', _strict_integer))


def validate(value, schema, where):
    """``value`` against ``schema``: a 400 naming the field if not.

    ``"integer"`` takes integer literals only: ``1.0`` and ``1e0`` are
    refused where an integer is required.

    :raises resq_nova.api.errors.BadRequest: ``resq.<where>.invalid``.
    """
    validator = Validator(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    if error is not None:
        path = '.'.join(str(p) for p in error.absolute_path) or '(top)'
        raise errors.BadRequest('%s field %s: %s' % (where, path,
                                                     _message(error)),
                                code='resq.%s.invalid' % where)


# jsonschema's messages quote the whole value ("[...] is too long"): the
# 400 of a list of 20,000 items was 129 KB. What is wrong, in a line.
MAX_MESSAGE = 300


def _message(error):
    keyword, limit = error.validator, error.validator_value
    instance = error.instance
    if keyword in ('maxItems', 'maxProperties', 'maxLength') and \
            hasattr(instance, '__len__'):
        return 'has %d %s, more than the %d allowed' % (
            len(instance), 'characters' if keyword == 'maxLength' else
            'items', limit)
    text = error.message
    if len(text) > MAX_MESSAGE:
        text = text[:MAX_MESSAGE - 3] + '...'
    return text


def _query_error(detail):
    return errors.BadRequest(detail, code='resq.query.invalid')


def query(req, schema):
    """The query string as a dict of single values, validated.

    :raises resq_nova.api.errors.BadRequest: not UTF-8, a control
        character, a parameter given twice, or not what ``schema`` allows.
    """
    try:
        pairs = list(req.GET.items())
    except UnicodeDecodeError:
        raise _query_error('the query string is not UTF-8 text; '
                           'percent-encode the UTF-8 bytes of each value')
    params = {}
    for key, value in pairs:
        found = validation.CONTROL.search(key + value)
        if found:
            raise _query_error('query parameter %r holds control character '
                               'U+%04X' % (key, ord(found.group())))
        if key in params:
            raise _query_error('query parameter %s is given %d times; give '
                               'it once' % (key, len(req.GET.getall(key))))
        params[key] = value
    validate(params, schema, 'query')
    return params


def limit(params, max_limit):
    value = params.get('limit')
    return min(int(value), max_limit) if value is not None else max_limit


def page_links(req, limit_value, next_marker=None):
    """``links``: ``self``, and ``next`` when ``next_marker`` is given.

    The next link keeps the request's query, with ``marker`` the last item
    of this page and ``limit`` the page size.
    """
    links = [{'rel': 'self', 'href': req.path_qs}]
    if next_marker is not None:
        params = dict(req.GET)
        params['marker'] = next_marker
        params['limit'] = str(limit_value)
        links.append({'rel': 'next',
                      'href': '%s?%s' % (req.path, parse.urlencode(params))})
    return links


def etag_matches(req, tag):
    # webob compares entity tags without their quotes.
    return req.if_none_match is not None and \
        tag.strip('"') in req.if_none_match
