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
    found = validation.unstorable(body)
    if found is not None:
        raise errors.BadRequest('body field %s %s; remove or correct it'
                                % found, code='resq.body.invalid')
    validate(body, schema, 'body')
    return body


def _strict_integer(checker, instance):
    # JSON Schema's "integer" is any number with a zero fractional part
    # (1.0, 1e0); an id or a count is sent as an integer, or refused.
    return isinstance(instance, int) and not isinstance(instance, bool)


# Draft 2020-12 with "integer" meaning a JSON integer literal.
Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
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
                                                     error.message),
                                code='resq.%s.invalid' % where)


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
