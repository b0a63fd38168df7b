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
"""An agent's Prometheus ``/metrics``, scraped and searched."""

import urllib.error
import urllib.request

from prometheus_client import parser


def scrape(url, timeout=10):
    """``[(name, labels, value)]`` of every sample; None if unreachable."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            text = resp.read().decode('utf-8')
    except (urllib.error.URLError, OSError):
        return None
    return [(s.name, s.labels, s.value)
            for family in parser.text_string_to_metric_families(text)
            for s in family.samples]


def instance_value(samples, name, server_uuid):
    """The value of ``name`` labelled with ``server_uuid``, or None."""
    for sample_name, labels, value in samples or ():
        if sample_name == name and labels.get('server_uuid') == server_uuid:
            return value
    return None
