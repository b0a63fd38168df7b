"""100 clients at once on resq-api, on MariaDB and on PostgreSQL.

Part of ``tox -e bench -- api`` (``tox -e bench -- api bursts`` runs only
this). The API (noauth2) is served on a real socket with a thread per
connection, so the hundred requests of a burst reach the database
together, as under uwsgi's workers. Per backend, five bursts:

* ``plans``: 100 ``POST /plans`` of distinct plans; then the plans left
  ``proposed`` are counted (the rule: one, the newest);
* ``claims``: 100 ``POST /plans/{id}/apply``, half on the proposed plan,
  half each on a plan of the burst; then the claims that won, per plan
  and in all;
* ``profiles``, ``hosts``, ``isolation``: 100 ``PUT`` of one new record
  (profiles: half the same document, half another); the rule: one 201,
  the others 200 or 409.

The figures, the worst over both backends: ``server_errors`` (target 0),
``appliers_per_plan_max`` (target 1), ``applying_plans_max`` (target 1),
``proposed_after_burst_max`` (target 1), ``creations_per_record_max``
(target 1), ``db_retries`` (transactions run again after a deadlock or a
lost insert), ``db_deadlock_retries`` (after a deadlock), and each
burst's ``burst_<burst>_p50_ms`` and ``burst_<burst>_p99_ms``
(milliseconds, one client's request); ``burst_rows`` has a row per
burst with each backend's own (``mariadb_p50_ms``, ``mariadb_p99_ms``,
``postgresql_p50_ms``, ...), as the table prints them.
"""

import logging
import uuid

import sqlalchemy as sa

from resq_nova.api.db import api as db_api
from resq_nova.api.db import models

CLIENTS = 100
BURSTS = ('plans', 'claims', 'profiles', 'hosts', 'isolation')
BACKENDS = (('mariadb', 'mysql'), ('postgresql', 'postgresql'))
# token (noauth2: admin) for every request
TOKEN = 'admin'


class _RetryCounter(logging.Handler):
    """Counts oslo.db's debug records of the transactions it ran again.

    ``Performing DB retry`` for each retry; ``DB error`` before those of
    a deadlock (a lost insert is retried without it).
    """

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.retries = self.deadlocks = 0

    def emit(self, record):
        message = record.getMessage()
        if message.startswith('Performing DB retry'):
            self.retries += 1
        elif message.startswith('DB error'):
            self.deadlocks += 1


def _plan(n):
    return {'id': 'burst-%03d' % n, 'snapshot_id': 'burst-snapshot',
            'plan': {'moves': [{'uuid': str(uuid.uuid4()), 'name': 'vm',
                                'from_host': 'h1', 'to_host': 'h0'}]}}


def _timed(name, outcomes, figures):
    from tests.fixtures import burst

    ms = [o.ms for o in outcomes]
    figures['burst_%s_p50_ms' % name] = round(burst.percentile(ms, 0.5), 1)
    figures['burst_%s_p99_ms' % name] = round(burst.percentile(ms, 0.99),
                                              1)
    figures['server_errors'] += sum(o.status >= 500 for o in outcomes)
    return outcomes


def _plans(send, figures):
    """The plans and claims bursts."""
    ids = ['burst-%03d' % n for n in range(CLIENTS)]
    # A plan names its snapshot.
    send([('POST', '/snapshots', {'id': 'burst-snapshot',
                                  'snapshot': {'hosts': []}})])
    _timed('plans', send([('POST', '/plans', _plan(n))
                          for n in range(CLIENTS)]), figures)
    with db_api.get_engine().connect() as conn:
        proposed = conn.execute(sa.select(models.Plan.id).where(
            models.Plan.state == 'proposed')).scalars().all()
    figures['proposed_after_burst'] = len(proposed)
    targets = [proposed[0] if n % 2 and proposed else ids[n]
               for n in range(CLIENTS)]
    outcomes = _timed('claims', send([
        ('POST', '/plans/%s/apply' % pid, {'applier': 'bench:%d' % n})
        for n, pid in enumerate(targets)]), figures)
    won = {}
    for pid, out in zip(targets, outcomes):
        if out.status == 202:
            won[pid] = won.get(pid, 0) + 1
    figures['appliers_per_plan_max'] = max(won.values(), default=0)
    figures['applying_plans'] = len(won)


def _records(send, figures):
    """The profiles, hosts and isolation bursts: one new record each."""
    from tests.unit.resq_profiler import test_profile

    same = test_profile.make_doc()
    same['id'] = 'burst-profile'
    other = test_profile.make_doc(**{'traffic.flows': 5000})
    other['id'] = 'burst-profile'
    bursts = {
        'profiles': [('PUT', '/profiles/burst-profile',
                      {'profile': other if n % 2 else same,
                       'visibility': 'public'}) for n in range(CLIENTS)],
        'hosts': [('PUT', '/hosts/burst-host',
                   {'domains': [], 'agent_version': str(n)})
                  for n in range(CLIENTS)],
        'isolation': [('PUT', '/servers/%s/isolation' % uuid.UUID(int=7),
                       {'status': 'ok', 'host': 'cn%d' % n})
                      for n in range(CLIENTS)],
    }
    created = []
    for name, reqs in bursts.items():
        outcomes = _timed(name, send(reqs), figures)
        created.append(sum(o.status == 201 for o in outcomes))
    figures['creations_per_record_max'] = max(created)


def measure(url):
    """Every burst on the database at ``url``; its figures."""
    from benchmarks import api
    from tests.fixtures import burst

    server = burst.ThreadedServer(api._app(url))
    server.setUp()
    counter = _RetryCounter()
    log = logging.getLogger('oslo_db.api')
    level, propagate = log.level, log.propagate
    log.setLevel(logging.DEBUG)
    log.propagate = False
    log.addHandler(counter)
    figures = {'server_errors': 0}
    try:
        def send(reqs):
            return burst.burst(server.endpoint, TOKEN, reqs)

        _plans(send, figures)
        _records(send, figures)
    finally:
        log.removeHandler(counter)
        log.setLevel(level)
        log.propagate = propagate
        server.cleanUp()
        db_api.reset()
    figures['db_retries'] = counter.retries
    figures['db_deadlock_retries'] = counter.deadlocks
    return figures


def _database(backend):
    """``(fixture, url, why not)`` for a throw-away database."""
    from tests.fixtures import database

    skipped = []

    def skip(why):
        skipped.append(why)
        raise RuntimeError(why)

    fix = database.Database(backend, skip)
    try:
        fix.setUp()
    except RuntimeError:
        return None, None, skipped[0]
    return fix, fix.url, None


def run():
    """``(per backend figures, reasons a backend was not measured)``."""
    results, missing = {}, {}
    for name, backend in BACKENDS:
        fix, url, why = _database(backend)
        if url is None:
            missing[name] = why
            continue
        try:
            results[name] = measure(url)
        finally:
            fix.cleanUp()
    return results, missing


def worst(results):
    """The worst of each figure over the backends (all are lower-better)."""
    out = {}
    for figures in results.values():
        for key, value in figures.items():
            out[key] = max(out.get(key, value), value)
    return out


def report(results, missing):
    """Print the table; :returns: the worst figures, for the JSON line."""
    names = list(results)
    print('100 clients at once on resq-api (threaded socket server, '
          'noauth2)')
    print('%-26s' % 'figure' + ''.join('%14s' % n for n in names))
    keys = ['server_errors', 'proposed_after_burst',
            'appliers_per_plan_max', 'applying_plans',
            'creations_per_record_max', 'db_retries',
            'db_deadlock_retries']
    keys += ['burst_%s_%s_ms' % (b, p) for b in BURSTS
             for p in ('p50', 'p99')]
    for key in keys:
        print('%-26s' % key + ''.join(
            '%14s' % results[n].get(key, '-') for n in names))
    for name, why in missing.items():
        print('%s: not measured (%s)' % (name, why))
    figures = worst(results)
    figures['proposed_after_burst_max'] = figures.pop(
        'proposed_after_burst', None)
    figures['applying_plans_max'] = figures.pop('applying_plans', None)
    figures['burst_backends'] = names
    # The table's timing rows, one a burst, each backend's columns.
    figures['burst_rows'] = [dict(
        [('burst', b)] + [('%s_%s_ms' % (n, p),
                           results[n]['burst_%s_%s_ms' % (b, p)])
                          for n in names for p in ('p50', 'p99')])
        for b in BURSTS]
    return figures
