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
"""SLOMO model documents: format, validation and the loaded model.

One document per NF profile (``<profile id>.slomo`` beside
``<profile id>.json`` in the profile store)::

    {"format": "resq-slomo-model", "format_version": 2,
     "nf": {"name", "profile_id"}, "platform": {...}, "traffic": {...},
     "solo_mpps": ..., "contentiousness": {"solo": {...},
     "pressured": {...}}, "probe": {...}, "features": [...],
     "target": "relative_throughput", "training": {...},
     "ensemble": {"init", "learning_rate", "n_features", "trees"},
     "checksum": "sha256:..."}

Version 2 adds the class of service to the features (the ways the mix
shares, :data:`metrics.CLASS_FEATURES`): its models answer for any class
size of the platform. Version 1 documents, trained on the whole LLC only,
still load and predict for the whole LLC; asked about a smaller class they
are refused (:class:`ClassSizeUnsupported`) with the advice to retrain.

The checksum covers the canonical JSON of everything else, so a file cut
short or edited by hand is refused even when it still parses. A document
of another format version, of other features, or trained on another
platform is refused too: the caller then has no prediction for the NF and
treats it as needing its own partition.
"""

import hashlib
import json
import math

import jsonschema

from resq_common import exception as common_exception
from resq_profiler.slomo import ensemble as ensemble_mod
from resq_profiler.slomo import metrics

FORMAT = 'resq-slomo-model'
FORMAT_VERSION = 2
# The features each readable format version was trained on.
VERSION_FEATURES = {1: metrics.FEATURES_V1, 2: metrics.FEATURES}
TARGET = 'relative_throughput'
# Platform fields that must match for a model to apply.
PLATFORM_KEYS = ('cpu_model', 'llc_ways', 'way_size_bytes')


class InvalidModel(common_exception.ResQException):
    msg_fmt = ('SLOMO model %(source)s refused: %(reason)s. The NF gets no '
               'contention prediction and needs its own cache partition '
               'until it is retrained ("resq-profiler" on this platform, '
               'see doc/source/admin/slomo.rst).')

    def __init__(self, source, reason):
        super().__init__(source=source, reason=reason)
        self.source = source
        self.reason = reason


class PlatformMismatch(InvalidModel):
    pass


class ClassSizeUnsupported(InvalidModel):
    """A version-1 model asked about a class smaller than the LLC."""


_NUM = {'type': 'number'}
_NONNEG = {'type': 'number', 'minimum': 0}
_INTS = {'type': 'array', 'items': {'type': 'integer'}}
_NUMS = {'type': 'array', 'items': _NUM}
_READING = {'type': 'object', 'required': list(metrics.COUNTERS),
            'properties': {c: _NONNEG for c in metrics.COUNTERS}}

SCHEMA = {
    'type': 'object',
    'required': ['format', 'format_version', 'nf', 'platform', 'traffic',
                 'solo_mpps', 'contentiousness', 'features', 'target',
                 'training', 'ensemble', 'checksum'],
    'additionalProperties': False,
    'properties': {
        'format': {'const': FORMAT},
        'format_version': {'enum': sorted(VERSION_FEATURES)},
        'checksum': {'type': 'string', 'pattern': '^sha256:[0-9a-f]{64}$'},
        'nf': {'type': 'object', 'required': ['name', 'profile_id'],
               'properties': {'name': {'type': 'string', 'minLength': 1},
                              'profile_id': {'type': 'string',
                                             'minLength': 1}}},
        'platform': {'type': 'object', 'required': list(PLATFORM_KEYS),
                     'properties': {
                         'cpu_model': {'type': 'string'},
                         'llc_ways': {'type': 'integer', 'minimum': 1},
                         'way_size_bytes': {'type': 'integer',
                                            'minimum': 1}}},
        'traffic': {'type': 'object', 'required': ['packet_bytes', 'flows'],
                    'properties': {
                        'packet_bytes': {'type': 'integer', 'minimum': 64},
                        'flows': {'type': 'integer', 'minimum': 1}}},
        'solo_mpps': {'type': 'number', 'exclusiveMinimum': 0},
        'contentiousness': {'type': 'object',
                            'required': list(metrics.CONDITIONS),
                            'properties': {c: _READING
                                           for c in metrics.CONDITIONS}},
        'probe': {'type': 'object'},
        'features': {'type': 'array', 'items': {'type': 'string'}},
        'target': {'const': TARGET},
        'training': {'type': 'object', 'required': ['driver', 'runs'],
                     'properties': {
                         'driver': {'type': 'string'},
                         'runs': {'type': 'integer', 'minimum': 1}}},
        'ensemble': {
            'type': 'object',
            'required': ['init', 'learning_rate', 'n_features', 'trees'],
            'properties': {
                'init': _NUM, 'learning_rate': {'type': 'number',
                                                'exclusiveMinimum': 0},
                'n_features': {'type': 'integer', 'minimum': 1},
                'trees': {'type': 'array', 'minItems': 1, 'items': {
                    'type': 'object',
                    'required': ['feature', 'threshold', 'left', 'right',
                                 'value'],
                    'properties': {'feature': _INTS, 'threshold': _NUMS,
                                   'left': _INTS, 'right': _INTS,
                                   'value': _NUMS}}}}},
    },
}
_VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def checksum(doc):
    """The checksum of ``doc`` without its ``checksum`` field."""
    body = {k: v for k, v in doc.items() if k != 'checksum'}
    text = json.dumps(body, sort_keys=True, separators=(',', ':'),
                      allow_nan=False)
    return 'sha256:' + hashlib.sha256(text.encode('utf-8')).hexdigest()


def seal(doc):
    """``doc`` with its checksum set."""
    doc = dict(doc)
    doc['checksum'] = checksum(doc)
    return doc


def _path(error):
    return '.'.join(str(p) for p in error.absolute_path) or '(document)'


def validate(doc, source='<memory>', platform=None):
    """Check a parsed document.

    :param platform: the platform dict the model is about to be used on;
        ``None`` skips the platform check.
    :raises InvalidModel: naming the file and what is wrong.
    :raises PlatformMismatch: when trained on another platform.
    """
    if not isinstance(doc, dict):
        raise InvalidModel(source, 'not a JSON object')
    if doc.get('format') != FORMAT:
        raise InvalidModel(source, 'not a SLOMO model document (format %r, '
                           'expected %r)' % (doc.get('format'), FORMAT))
    version = doc.get('format_version')
    if isinstance(version, bool) or version not in VERSION_FEATURES:
        raise InvalidModel(source, 'format version %r is not supported; '
                           'this release reads versions %s'
                           % (version, ', '.join(
                               str(v) for v in sorted(VERSION_FEATURES))))
    errors = sorted(_VALIDATOR.iter_errors(doc),
                    key=lambda e: (-len(e.absolute_path),
                                   [str(p) for p in e.absolute_path]))
    if errors:
        raise InvalidModel(source, 'field %s: %s' % (_path(errors[0]),
                                                     errors[0].message))
    try:
        expected = checksum(doc)
    except ValueError as exc:
        raise InvalidModel(source, 'not valid JSON numbers (%s)' % exc)
    if doc['checksum'] != expected:
        raise InvalidModel(source, 'checksum mismatch: the file was cut '
                           'short or edited after training')
    features = VERSION_FEATURES[version]
    if list(doc['features']) != list(features):
        raise InvalidModel(source, 'trained on features %s; format version '
                           '%d uses %s' % (', '.join(doc['features']),
                                           version, ', '.join(features)))
    if doc['ensemble']['n_features'] != len(features):
        raise InvalidModel(source, 'ensemble.n_features is %d, expected %d'
                           % (doc['ensemble']['n_features'], len(features)))
    try:
        ensemble_mod.check(doc['ensemble'])
        metrics.Contentiousness.from_dict(doc['contentiousness'])
    except ValueError as exc:
        raise InvalidModel(source, str(exc))
    if platform is not None:
        mine = {k: doc['platform'].get(k) for k in PLATFORM_KEYS}
        theirs = {k: platform.get(k) for k in PLATFORM_KEYS}
        if mine != theirs:
            diff = ', '.join('%s %r (here %r)' % (k, mine[k], theirs[k])
                             for k in PLATFORM_KEYS if mine[k] != theirs[k])
            raise PlatformMismatch(source, 'trained for another platform: '
                                   + diff)


def parse(text, source='<memory>', platform=None):
    """Parse and validate a document; :returns: a :class:`Model`."""
    try:
        doc = json.loads(text, parse_constant=_no_constant)
    except ValueError as exc:
        raise InvalidModel(source, 'corrupt: not valid JSON (%s)' % exc)
    validate(doc, source, platform)
    return Model(doc, source)


def _no_constant(name):
    raise ValueError('%s is not a number JSON allows' % name)


class Model:
    """An NF's validated SLOMO model: its sensitivity and contentiousness."""

    def __init__(self, doc, source='<memory>'):
        self.doc = doc
        self.source = source
        self.name = doc['nf']['name']
        self.profile_id = doc['nf']['profile_id']
        self.platform = doc['platform']
        self.version = doc['format_version']
        self.solo_mpps = doc['solo_mpps']
        self.contentiousness = metrics.Contentiousness.from_dict(
            doc['contentiousness'])
        self._ensemble = ensemble_mod.Ensemble(doc['ensemble'])

    @property
    def llc_ways(self):
        return self.platform['llc_ways']

    def row(self, competitors, ways=None):
        """The feature vector of ``competitors`` sharing ``ways`` ways.

        :param ways: ways of the class shared; ``None`` is the whole LLC.
        :raises ValueError: for a class the platform cannot have.
        :raises ClassSizeUnsupported: a version-1 model (whole LLC only)
            asked about a smaller class.
        """
        if ways is not None and (
                isinstance(ways, bool) or not isinstance(ways, int)
                or not 1 <= ways <= self.llc_ways):
            raise ValueError('a class of service of %s has 1 to %d ways, '
                             'got %r' % (self.platform.get('cpu_model'),
                                         self.llc_ways, ways))
        if self.version == 1:
            if ways is not None and ways < self.llc_ways:
                raise ClassSizeUnsupported(
                    self.source, 'trained on the whole LLC only (format '
                    'version 1), it cannot predict a class of %d of %d '
                    'ways; retrain it ("resq-profiler slomo-train %s") to '
                    'train at class sizes' % (ways, self.llc_ways,
                                              self.profile_id))
            return metrics.compose(competitors)
        return metrics.compose(competitors, ways or self.llc_ways,
                               self.platform['way_size_bytes'])

    def relative(self, competitors, ways=None):
        """Predicted throughput relative to solo, in ``[0, 1]``.

        Solo is the NF alone with the whole LLC, so a small class lowers
        the prediction even without competitors.

        :param competitors: :class:`metrics.Contentiousness` of every
            competing instance.
        :param ways: ways of the class they share (``None``: whole LLC).
        """
        value = self._ensemble.predict(self.row(competitors, ways))
        if not math.isfinite(value):
            # Validated trees give finite sums; guard the contract anyway.
            return 0.0
        return min(max(value, 0.0), 1.0)

    def predict_mpps(self, competitors, ways=None):
        """Predicted saturation throughput (Mpps), never negative or NaN.

        :param ways: ways of the class shared (``None``: whole LLC).
        """
        return self.solo_mpps * self.relative(competitors, ways)

    def to_json(self):
        return json.dumps(self.doc, sort_keys=True, indent=1,
                          allow_nan=False)
