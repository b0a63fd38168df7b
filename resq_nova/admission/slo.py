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
"""SLO set files: reserved SLO terms, with their profiles resolved.

The format and its checks are :mod:`resq_nova.admission.batch.slo_file`'s (YAML
or
JSON; a list of terms, or a mapping whose ``terms`` key holds it)::

    {"terms": [{"name": "fw-tenant-a", "profile": "<profile id>",
                "throughput_mpps": 0.5, "latency_p95_us": 120,
                "packet_bytes": 64, "max_instances": 8}]}

``profile`` names a profile in the store; ``packet_bytes``,
``max_instances``, ``chain`` and ``mem_bw_mibps`` (the memory bandwidth,
MiB/s, each instance holds) are optional. ``resq-plan --slo-file`` and
``resq-admit --slo-file`` read the same files.
"""

from resq_common import jsonutils
from resq_nova.admission.batch import slo_file
from resq_nova.admission import greedy
from resq_profiler import exception

# One exception for every SLO file error, whichever reader raises it.
InvalidSLOFile = slo_file.InvalidSLOFile


def read_items(path):
    """The ``terms`` list of a JSON SLO set; errors name the file.

    The evaluation's sets read this way (their terms name an ``nf``
    instead of a ``profile``).
    """
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
    """Parse an SLO file and resolve its profiles from ``store``.

    :raises InvalidSLOFile: naming the file, the term and the field, also
        for a profile the store lacks.
    """
    result = []
    for spec in slo_file.load(path):
        try:
            prof = store.get(spec.profile)
        except exception.ProfileNotFound as exc:
            raise InvalidSLOFile(path=path, reason='term %d (%s): field '
                                 'profile: %s' % (spec.index, spec.name,
                                                  exc))
        result.append(greedy.SLOTerm(
            name=spec.name, profile=prof,
            throughput_mpps=spec.throughput_mpps,
            latency_p95_us=spec.latency_p95_us,
            packet_bytes=spec.packet_bytes,
            max_instances=spec.max_instances,
            mem_bw_mibps=spec.mem_bw_mibps))
    return result
