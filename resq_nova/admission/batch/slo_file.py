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
"""SLO files: several reserved SLO terms, in YAML or JSON. Pure.

A file is a list of terms, or a mapping whose ``terms`` key holds it::

    - name: fw
      profile: firewall-64B-100000flows-0123abcd
      throughput_mpps: 10
      latency_p95_us: 25
      chain: edge-sfc          # optional
      packet_bytes: 64         # optional: must match the profile's
      max_instances: 4         # optional
      mem_bw_mibps: 2000       # optional: memory bandwidth per instance

``mem_bw_mibps`` is the memory bandwidth, in MiB/s, each instance of the
term holds from its cache domain (the NF's DRAM traffic at its share of the
target, which the operator measures or reads from the profile's
measurements): admission counts it as a second dimension beside the ways,
and the term's flavors ask Placement for it (``resq:mem_bw_mibps``).

Every error names the file, the term (1-based index and name) and the
field, and says how to fix it.
"""

import dataclasses
import numbers

import yaml

from resq_common import jsonutils
from resq_common import profile as profile_mod
from resq_profiler import exception

REQUIRED = ('name', 'profile', 'throughput_mpps', 'latency_p95_us')
OPTIONAL = ('chain', 'packet_bytes', 'max_instances', 'mem_bw_mibps')
# As Nova's validator of resq:mem_bw_mibps.
MEM_BW_MAX = 100_000_000
EXAMPLE = ('- name: fw\n  profile: <profile id>\n  throughput_mpps: 10\n'
           '  latency_p95_us: 25\n  chain: <chain name, optional>')

# An SLO file names a few hundred terms at most.
MAX_BYTES = 4 * 1024 * 1024


class InvalidSLOFile(exception.ResQException):
    msg_fmt = 'SLO file %(path)s: %(reason)s'


@dataclasses.dataclass(frozen=True)
class TermSpec:
    """One term of an SLO file, checked but with its profile not loaded."""

    index: int          # 1-based, as an editor shows it
    name: str
    profile: str
    throughput_mpps: float
    latency_p95_us: float
    chain: str = None
    packet_bytes: int = None
    max_instances: int = None
    mem_bw_mibps: int = None


def load(path):
    """Read and check an SLO file.

    :returns: the list of :class:`TermSpec`, in file order.
    :raises InvalidSLOFile: naming the file, term, field and the fix.
    """
    try:
        text = jsonutils.read_text(path, MAX_BYTES)
    except ValueError as exc:
        raise InvalidSLOFile(path=path, reason=str(exc))
    except OSError as exc:
        raise InvalidSLOFile(path=path, reason='cannot be read (%s); give '
                             'the path of a YAML or JSON file' % exc.strerror)
    return parse(text, path)


def parse(text, path='<text>'):
    """:func:`load` for text already read; ``path`` names it in errors."""
    try:
        if len(text) > MAX_BYTES:
            raise ValueError('more than the %d characters an SLO file may '
                             'have' % MAX_BYTES)
        if path.endswith('.json'):
            doc = jsonutils.loads(text, max_bytes=MAX_BYTES)
        else:
            # YAML is a superset of JSON: other names read either.
            doc = yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise InvalidSLOFile(path=path, reason='is not valid %s: %s' % (
            'JSON' if path.endswith('.json') else 'YAML or JSON',
            ' '.join(str(exc).split())))
    if isinstance(doc, dict):
        unknown = sorted(set(doc) - {'terms'})
        if unknown:
            raise InvalidSLOFile(path=path, reason='unknown top-level key(s) '
                                 '%s; the file is a list of terms, or a '
                                 'mapping with only "terms"' %
                                 ', '.join(map(str, unknown)))
        doc = doc.get('terms')
    if not isinstance(doc, list) or not doc:
        raise InvalidSLOFile(path=path, reason='holds no terms; write a list '
                             'of terms, e.g.\n' + EXAMPLE)
    terms = []
    seen = {}
    for index, item in enumerate(doc, 1):
        term = _term(path, index, item)
        if term.name in seen:
            raise InvalidSLOFile(path=path, reason='term %d: name %r is '
                                 'also term %d\'s; every term needs its own '
                                 'name (it names its flavors and servers)'
                                 % (index, term.name, seen[term.name]))
        seen[term.name] = index
        terms.append(term)
    return terms


def _term(path, index, item):
    if not isinstance(item, dict):
        raise InvalidSLOFile(path=path, reason='term %d is %s, not a mapping '
                             'of fields; write it as\n%s' % (
                                 index, type(item).__name__, EXAMPLE))
    label = 'term %d' % index
    if isinstance(item.get('name'), str):
        label += ' (%s)' % item['name']

    def bad(field, why):
        return InvalidSLOFile(path=path, reason='%s: field %s %s' % (
            label, field, why))

    unknown = sorted(set(map(str, item)) - set(REQUIRED) - set(OPTIONAL))
    if unknown:
        raise bad(unknown[0], 'is unknown; the fields are %s (required) '
                  'and %s (optional)' % (', '.join(REQUIRED),
                                         ', '.join(OPTIONAL)))
    for field in REQUIRED:
        if item.get(field) is None:
            raise bad(field, 'is missing; every term needs %s'
                      % ', '.join(REQUIRED))
    for field in ('name', 'profile', 'chain'):
        value = item.get(field)
        if value is None:
            continue
        if not isinstance(value, str) or not profile_mod.ID_RE.match(value):
            raise bad(field, 'is %r; use 1-128 letters, digits, ".", "_" '
                      'or "-", starting with a letter or digit' % (value,))
    values = {}
    for field, unit in (('throughput_mpps', 'Mpps'),
                        ('latency_p95_us', 'microseconds')):
        value = item[field]
        if (isinstance(value, bool) or not isinstance(value, numbers.Real)
                or not value > 0):
            raise bad(field, 'is %r; give a positive number of %s' % (
                value, unit))
        values[field] = float(value)
    for field, what in (('packet_bytes', 'the packet size in bytes the '
                                         'profile was measured with'),
                        ('max_instances', 'the most instances the term may '
                                          'use')):
        value = item.get(field)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) \
                or value < 1:
            raise bad(field, 'is %r; give a whole number of at least 1: %s'
                      % (value, what))
        values[field] = value
    value = item.get('mem_bw_mibps')
    if value is not None:
        if isinstance(value, bool) or not isinstance(value, int) \
                or not 1 <= value <= MEM_BW_MAX:
            raise bad('mem_bw_mibps', 'is %r; give a whole number of MiB/s '
                      'from 1 to %d: the memory bandwidth each instance '
                      'holds (or leave it out)' % (value, MEM_BW_MAX))
        values['mem_bw_mibps'] = value
    return TermSpec(index, item['name'], item['profile'],
                    chain=item.get('chain'), **values)
