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
"""JSON schema of profile documents (``schema_version`` 1)."""

import jsonschema

from resq_common import exception

SCHEMA_VERSION = 1

_POSITIVE = {'type': 'number', 'exclusiveMinimum': 0}
# More points than any measurement takes (the profiler measures tens; a
# fitted curve has one per way): a bound on what checking a document costs.
MAX_POINTS = 1024
_POINTS = {
    'type': 'array', 'minItems': 2, 'maxItems': MAX_POINTS,
    'items': {'type': 'array', 'minItems': 2, 'maxItems': 2,
              'items': _POSITIVE},
}

# How a stored curve came about (optional; profiles without it hold
# measured points only). With ``derived_points`` the curve's points are a
# fitted model's values and ``measured`` holds ``[x, mean, readings]`` of
# what was measured.
_FIT = {
    'type': 'object', 'required': ['model', 'derived_points', 'measured'],
    'properties': {
        'model': {'type': 'string', 'minLength': 1},
        'derived_points': {'type': 'boolean'},
        'measured': {
            'type': 'array', 'minItems': 1, 'maxItems': MAX_POINTS,
            'items': {'type': 'array', 'minItems': 3, 'maxItems': 3,
                      'prefixItems': [_POSITIVE, _POSITIVE,
                                      {'type': 'integer', 'minimum': 1}]}},
        'params': {'type': 'object',
                   'additionalProperties': {'type': 'number'}},
        'fallback': {'type': 'string'},
    },
}

PROFILE_SCHEMA = {
    'type': 'object',
    'required': ['schema_version', 'id', 'nf', 'traffic', 'platform',
                 'throughput', 'latency', 'measurement'],
    'additionalProperties': False,
    'properties': {
        'schema_version': {'const': SCHEMA_VERSION},
        'id': {'type': 'string', 'minLength': 1, 'maxLength': 128},
        'nf': {
            'type': 'object', 'required': ['name', 'config_digest'],
            'properties': {
                'name': {'type': 'string', 'minLength': 1},
                'config_digest': {'type': 'string',
                                  'pattern': '^sha256:[0-9a-f]{64}$'},
                'description': {'type': 'string'},
            },
        },
        'traffic': {
            'type': 'object', 'required': ['packet_bytes', 'flows'],
            'properties': {
                'packet_bytes': {'type': 'integer', 'minimum': 64,
                                 'maximum': 9216},
                'flows': {'type': 'integer', 'minimum': 1},
            },
        },
        'platform': {
            'type': 'object',
            'required': ['llc_ways', 'way_size_bytes', 'cpu_model'],
            'properties': {
                'llc_ways': {'type': 'integer', 'minimum': 1,
                             'maximum': 64},
                'way_size_bytes': {'type': 'integer', 'minimum': 1},
                'cpu_model': {'type': 'string'},
            },
        },
        'throughput': {
            'type': 'object', 'required': ['unit', 'points'],
            'properties': {'unit': {'const': 'Mpps'}, 'points': _POINTS},
        },
        'latency': {
            'type': 'object', 'required': ['unit', 'percentile', 'ways',
                                           'points'],
            'properties': {
                'unit': {'const': 'us'},
                'percentile': {'const': 95},
                'ways': {'type': 'integer', 'minimum': 1},
                'load': {'type': 'string'},
                'points': {
                    'type': 'array', 'minItems': 2, 'maxItems': MAX_POINTS,
                    'items': {'type': 'array', 'minItems': 2, 'maxItems': 2,
                              'prefixItems': [
                                  {'type': 'number', 'exclusiveMinimum': 0,
                                   'maximum': 1},
                                  _POSITIVE]}},
            },
        },
        'measurement': {
            'type': 'object',
            'required': ['driver', 'points', 'max_interpolation_error_pct'],
            'properties': {
                'driver': {'type': 'string'},
                'points': {
                    'type': 'object', 'required': ['throughput', 'latency'],
                    'properties': {
                        'throughput': {'type': 'integer', 'minimum': 2},
                        'latency': {'type': 'integer', 'minimum': 2}}},
                'max_interpolation_error_pct': {'type': 'number',
                                                'minimum': 0},
                'tolerance_pct': {'type': 'number', 'exclusiveMinimum': 0},
                'fit': {
                    'type': 'object',
                    'properties': {'throughput': _FIT, 'latency': _FIT}},
            },
        },
    },
}

_VALIDATOR = jsonschema.Draft202012Validator(PROFILE_SCHEMA)


def _path(error):
    parts = []
    for part in error.absolute_path:
        if isinstance(part, int):
            parts.append('[%d]' % part)
        else:
            parts.append(('.' if parts else '') + str(part))
    return ''.join(parts) or '(document)'


def validate(doc, source='<memory>'):
    """Check ``doc`` against the schema.

    :raises resq_common.exception.InvalidProfile: with the JSON path of
        the first (deepest, then first in document order) error.
    """
    if isinstance(doc, dict) and doc.get('schema_version') not in (
            None, SCHEMA_VERSION):
        raise exception.InvalidProfile(
            source, 'schema_version', 'version %r is not supported; this '
            'release reads version %d' % (doc.get('schema_version'),
                                          SCHEMA_VERSION))
    # Before the schema, which would check (and sort the errors of) every
    # point of a curve far too long.
    for path in (('throughput', 'points'), ('latency', 'points')):
        node = doc
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, list) and len(node) > MAX_POINTS:
            raise exception.InvalidProfile(
                source, '.'.join(path), 'has %d points, more than %d; '
                'keep the measured points' % (len(node), MAX_POINTS))
    errors = sorted(_VALIDATOR.iter_errors(doc),
                    key=lambda e: (-len(e.absolute_path),
                                   [str(p) for p in e.absolute_path]))
    if errors:
        err = errors[0]
        raise exception.InvalidProfile(source, _path(err), err.message)
