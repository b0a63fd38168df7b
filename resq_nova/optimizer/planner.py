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
"""From a snapshot to a plan document. Pure apart from the solver.

::

    {"id", "created_at", "snapshot_id", "hosts_used_before",
     "hosts_used_after", "lower_bound", "gap_pct", "proposed", "reason",
     "moves": [{"uuid", "from_host", "from_domain", "to_host",
                "to_domain", ...}],
     "moves_lower_bound", "left_out", "fixed", "min_hosts_freed",
     "solver": {...}, "status"}

``moves`` are in execution order. ``lower_bound`` and ``gap_pct`` are the
hosts HiGHS proved necessary and how far ``hosts_used_after`` may be from
the optimum; ``moves_lower_bound`` the moves any plan with that many hosts
needs. A plan is ``proposed`` only when it frees at least
``min_hosts_freed`` hosts (ResQ's threshold: moving NFs costs more than it
saves otherwise); ``reason`` says why, or why not.
"""

import datetime
import time
import uuid as uuid_mod

from resq_nova.optimizer import model
from resq_nova.optimizer import ordering

PROPOSED = 'proposed'
NOT_PROPOSED = 'not-proposed'


def new_id(prefix):
    now = datetime.datetime.now(datetime.timezone.utc)
    return '%s-%s-%s' % (prefix, now.strftime('%Y%m%dT%H%M%S'),
                         uuid_mod.uuid4().hex[:6])


def make_plan(snap, min_hosts_freed=1, time_limit=60.0, mip_gap=0.0,
              snapshot_id=None):
    """Plan on ``snap``; the plan document (see the module doc)."""
    started = time.monotonic()
    result = model.solve(snap, time_limit=time_limit, mip_gap=mip_gap)
    moves, left_out = ordering.order(snap, result.targets)
    before = result.hosts_before
    after = len(ordering.hosts_in_use_after(snap, moves))
    lower = min(result.lower_bound, after)
    freed = before - after
    if not moves:
        proposed = False
        reason = ('no plan uses fewer than the %d hosts in use now (at '
                  'least %d are needed)' % (before, lower))
    elif freed < min_hosts_freed:
        proposed = False
        reason = ('the plan frees %d host(s) with %d move(s); '
                  'min_hosts_freed is %d, so nothing moves'
                  % (freed, len(moves), min_hosts_freed))
    else:
        proposed = True
        reason = ('frees %d host(s) (%d -> %d in use) with %d live '
                  'migration(s)' % (freed, before, after, len(moves)))
    if left_out:
        reason += ('; %d move(s) left out for want of a safe order'
                   % len(left_out))
    return {
        'id': new_id('plan'),
        'created_at': datetime.datetime.now(
            datetime.timezone.utc).isoformat(timespec='seconds'),
        'snapshot_id': snapshot_id,
        'hosts_used_before': before,
        'hosts_used_after': after,
        'lower_bound': lower,
        'gap_pct': round(model.gap_pct(after, lower), 3),
        'proposed': proposed,
        'reason': reason,
        'moves': moves,
        'moves_lower_bound': result.moves_lower_bound,
        'left_out': left_out,
        'fixed': [{'uuid': u, 'reason': r}
                  for u, r in sorted(result.fixed.items())],
        'min_hosts_freed': min_hosts_freed,
        'solver': {'status': result.status,
                   'build_seconds': round(result.build_s, 3),
                   'solve_seconds': round(result.solve_s, 3),
                   'seconds': round(time.monotonic() - started, 3),
                   'time_limit': time_limit, 'mip_gap': mip_gap},
        'status': PROPOSED if proposed else NOT_PROPOSED,
    }
