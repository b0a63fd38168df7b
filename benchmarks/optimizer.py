"""The optimizer's plan on a fragmented synthetic cloud (issue 9).

Clouds of 100 to 1,000 hosts with two cache domains each (9 dedicated
cores and 18 usable ways per domain, 15 classes of service per host) and
five ResQ instances per host on average, of mixed shapes (1-3 cores, 2-9
ways), scattered at random so that most hosts are partly used. Some
instances are pinned (not migratable), some pinned to their availability
zone, some hosts disabled, some carry non-ResQ load, and 5% of the
instances belong to anti-affinity groups of three. Each cloud is planned
from its snapshot with the plan's time limit of 60 s (model build
included) and a 0.5% relative gap target.

Targets at 1,000 hosts and 5,000 instances: seconds <= 60, gap_pct <= 1,
moves <= 1.10 x moves_lower_bound.
"""

import json
import random
import sys
import time

from resq_nova.optimizer import planner
from resq_nova.optimizer import snapshot

SHAPES = [(1, 2), (1, 3), (1, 4), (2, 4), (1, 6), (2, 6), (2, 8), (3, 9)]
WEIGHTS = [4, 4, 3, 2, 2, 1, 1, 1]


def cloud(hosts, instances, seed=1):
    """A fragmented cloud as a snapshot document."""
    rng = random.Random('optimizer/%d/%d' % (hosts, seed))
    docs = []
    for i in range(hosts):
        docs.append({'name': 'cmp%04d' % i, 'clos': 15,
                     'disabled': i % 97 == 5, 'az': 'az%d' % (i % 2),
                     'other_load': 1 if i % 53 == 7 else 0,
                     'domains': [{'id': d, 'cores': 9, 'ways': 18,
                                  'reserved_ways': 2} for d in (0, 1)]})
    use = {(h['name'], d): [0, 0] for h in docs for d in (0, 1)}
    clos = {h['name']: 0 for h in docs}
    insts = []
    for n in range(instances):
        cores, ways = rng.choices(SHAPES, WEIGHTS)[0]
        for _ in range(1000):
            h = rng.choice(docs)
            d = rng.choice((0, 1))
            u = use[h['name'], d]
            # Leave a little room everywhere: a fragmented cloud.
            if u[0] + cores <= 9 and u[1] + ways <= 16 \
                    and clos[h['name']] < 15:
                break
        else:
            continue
        u[0] += cores
        u[1] += ways
        clos[h['name']] += 1
        inst = {'uuid': 'i-%05d' % n, 'host': h['name'], 'domain': d,
                'cores': cores, 'ways': ways, 'clos': 1,
                'migratable': rng.random() > 0.05}
        if not inst['migratable']:
            inst['reason'] = 'flavor says resq:migratable=false'
        if rng.random() < 0.1:
            inst['az'] = h['az']
        insts.append(inst)
    groups = []
    pool = list(insts)
    rng.shuffle(pool)
    for g in range(len(insts) // 60):
        members, seen = [], set()
        for inst in pool[g * 3:(g + 1) * 3]:
            if inst['host'] not in seen:
                seen.add(inst['host'])
                members.append(inst['uuid'])
        groups.append({'policy': 'anti-affinity', 'members': members,
                       'id': 'group-%d' % g})
    return {'hosts': docs, 'instances': insts, 'server_groups': groups}


def case(hosts, time_limit=60.0, mip_gap=0.005):
    doc = cloud(hosts, hosts * 5)
    started = time.monotonic()
    snap = snapshot.from_dict(doc, 'synthetic-%d' % hosts)
    plan = planner.make_plan(snap, time_limit=time_limit, mip_gap=mip_gap)
    seconds = time.monotonic() - started
    moves = len(plan['moves'])
    return {'hosts': hosts, 'instances': len(snap.instances),
            'seconds': round(seconds, 2),
            'build_seconds': plan['solver']['build_seconds'],
            'hosts_before': plan['hosts_used_before'],
            'hosts_after': plan['hosts_used_after'],
            'lower_bound': plan['lower_bound'],
            'gap_pct': round(plan['gap_pct'], 3),
            'hosts_freed': (plan['hosts_used_before']
                            - plan['hosts_used_after']),
            'moves': moves, 'moves_lower_bound': plan['moves_lower_bound'],
            'moves_ratio': (round(moves / plan['moves_lower_bound'], 4)
                            if plan['moves_lower_bound'] else None),
            'left_out': len(plan['left_out']),
            'status': plan['solver']['status']}


def main(argv):
    sizes = [int(a) for a in argv] or [100, 250, 500, 1000]
    rows = []
    for hosts in sizes:
        print('... %d hosts' % hosts, flush=True)
        rows.append(case(hosts))
    print('Plan on a fragmented cloud (two-stage MILP, 60 s limit)')
    print('%6s %6s %7s %7s %6s %6s %6s %6s %6s %s' % (
        'hosts', 'insts', 'seconds', 'before', 'after', 'bound', 'gap%',
        'moves', 'mlb', 'status'))
    for r in rows:
        print('%6d %6d %7.1f %7d %6d %6d %6.2f %6d %6d %s' % (
            r['hosts'], r['instances'], r['seconds'], r['hosts_before'],
            r['hosts_after'], r['lower_bound'], r['gap_pct'], r['moves'],
            r['moves_lower_bound'], r['status']))
    big = rows[-1]
    figures = {'benchmark': 'optimizer'}
    figures.update({k: big[k] for k in (
        'hosts', 'instances', 'seconds', 'gap_pct', 'hosts_freed', 'moves',
        'moves_lower_bound')})
    keys = ('hosts', 'instances', 'seconds', 'build_seconds', 'gap_pct',
            'moves_ratio')
    figures['scaling'] = [{k: r[k] for k in keys} for r in rows]
    print(json.dumps(figures, sort_keys=True))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
