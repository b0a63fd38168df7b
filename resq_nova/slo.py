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
"""SLO set files: a JSON list of reserved SLO terms.

::

    {"terms": [{"name": "fw-tenant-a", "profile": "<profile id>",
                "throughput_mpps": 0.5, "latency_p95_us": 120,
                "packet_bytes": 64, "max_instances": 8}]}

``profile`` names a profile in the store; ``packet_bytes`` and
``max_instances`` are optional.
"""

from resq_common import jsonutils
from resq_nova import greedy
from resq_profiler import exception

_REQUIRED = ('name', 'profile', 'throughput_mpps', 'latency_p95_us')


class InvalidSLOFile(exception.ResQException):
    msg_fmt = 'SLO file %(path)s: %(reason)s'


def read_items(path):
    """The ``terms`` list of an SLO file; errors name the file."""
    try:
        with open(path, encoding='utf-8') as f:
            doc = jsonutils.load(f)
    except OSError as exc:
        raise InvalidSLOFile(path=path, reason='cannot be read: %s'
                             % exc.strerror)
    except ValueError as exc:
        raise InvalidSLOFile(path=path, reason='not JSON: %s' % exc)
    terms = doc.get('terms') if isinstance(doc, dict) else None
    if not isinstance(terms, list) or not terms:
        raise InvalidSLOFile(path=path, reason='needs a non-empty "terms" '
                             'list')
    return terms


def positive(path, field, value):
    """``value`` as a float if it is a positive number, else an error."""
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or value <= 0):
        raise InvalidSLOFile(path=path, reason='%s must be a positive '
                             'number, got %r' % (field, value))
    return float(value)


def load_terms(path, store):
    """Parse an SLO file and resolve its profiles from ``store``."""
    terms = read_items(path)
    result = []
    names = set()
    for i, item in enumerate(terms):
        where = 'terms[%d]' % i
        if not isinstance(item, dict):
            raise InvalidSLOFile(path=path, reason='%s is not an object'
                                 % where)
        for key in _REQUIRED:
            if key not in item:
                raise InvalidSLOFile(path=path, reason='%s lacks "%s"'
                                     % (where, key))
        thr = positive(path, where + '.throughput_mpps',
                       item['throughput_mpps'])
        lat = positive(path, where + '.latency_p95_us',
                       item['latency_p95_us'])
        if item['name'] in names:
            raise InvalidSLOFile(path=path, reason='%s.name %r is used twice'
                                 % (where, item['name']))
        names.add(item['name'])
        try:
            prof = store.get(item['profile'])
        except exception.ProfileNotFound as exc:
            raise InvalidSLOFile(path=path, reason='%s.profile: %s'
                                 % (where, exc))
        result.append(greedy.SLOTerm(
            name=item['name'], profile=prof,
            throughput_mpps=thr, latency_p95_us=lat,
            packet_bytes=item.get('packet_bytes'),
            max_instances=item.get('max_instances')))
    return result
