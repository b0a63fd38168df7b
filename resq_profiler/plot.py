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
"""PNG plots of profiles (matplotlib, headless)."""

import os

import matplotlib

matplotlib.use('Agg')
from matplotlib import pyplot  # noqa: E402


def write_profile_png(prof, path):
    """Plot throughput-vs-ways and latency-vs-load side by side."""
    fig, (left, right) = pyplot.subplots(1, 2, figsize=(10, 4))
    try:
        fit = prof.measurement.get('fit', {})
        ways = [w for w, _ in prof.throughput]
        thr_fit = fit.get('throughput', {})
        if thr_fit.get('derived_points'):
            left.plot(ways, [t for _, t in prof.throughput], '-',
                      label='fitted (%s)' % thr_fit['model'])
            left.plot([m[0] for m in thr_fit['measured']],
                      [m[1] for m in thr_fit['measured']], 'o',
                      color='tab:blue', label='measured (mean)')
        else:
            left.plot(ways, [t for _, t in prof.throughput], 'o-',
                      label='measured (interpolated between)')
        pieces, _ = prof.concave_fit()
        for p in pieces:
            left.plot([p.pivot, p.end], [p.at(p.pivot), p.at(p.end)], ':',
                      color='grey')
        left.set_xlabel('LLC ways')
        left.set_ylabel('throughput (Mpps)')
        left.set_title('%s: throughput vs LLC' % prof.name)
        left.set_ylim(bottom=0)
        left.grid(True, alpha=0.3)
        left.legend(loc='lower right', fontsize='small')
        lat_fit = fit.get('latency', {})
        right.plot([x * 100 for x, _ in prof.latency],
                   [y for _, y in prof.latency],
                   '-' if lat_fit.get('derived_points') else 's-',
                   color='tab:red')
        if lat_fit.get('derived_points'):
            right.plot([m[0] * 100 for m in lat_fit['measured']],
                       [m[1] for m in lat_fit['measured']], 's',
                       color='tab:red')
        right.set_xlabel('offered load (%% of %.3f Mpps at %d ways)'
                         % (prof.throughput_at(prof.latency_ways),
                            prof.latency_ways))
        right.set_ylabel('p95 latency (us)')
        right.set_title('%s: latency vs load' % prof.name)
        right.grid(True, alpha=0.3)
        fig.suptitle('%s (%d B, %d flows; %s driver)' % (
            prof.profile_id, prof.traffic['packet_bytes'],
            prof.traffic['flows'], prof.measurement['driver']),
            fontsize='small')
        fig.tight_layout()
        save_figure(fig, path)
    finally:
        pyplot.close(fig)


def save_figure(fig, path):
    """Save ``fig`` as PNG atomically (no half-written file on error)."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    tmp = path + '.tmp.png'
    fig.savefig(tmp, dpi=100)
    os.replace(tmp, path)
