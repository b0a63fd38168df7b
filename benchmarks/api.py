"""resq-api in-process: reads under load, and racing admissions' claims.

``tox -e bench -- api`` prints a table and ends with one JSON line:

* ``profiles_get_p50_ms`` / ``profiles_get_p99_ms``: ``GET
  /profiles/{id}`` through the whole WSGI stack (noauth2, so the token
  check of a deployment is not in it) with 1,000 profiles stored;
* ``terms_list_p99_ms``: one project's page (100 terms, newest first) with
  10,000 terms stored;
* each on SQLite (a file) and, when it answers, MariaDB (a throw-away
  database on 127.0.0.1:3306, dropped afterwards);
* ``concurrent_admit_overcommit``: 100 admissions racing on a small
  cluster in a real Placement (in-process): each reads the cache domains'
  usage, picks one with room and claims 3 ways and a class of service for
  its consumer, as resq-admit's boots end up doing through Nova; the
  figure is how many cache domains hold more than their capacity
  afterwards (target 0), beside how many admissions were claimed;
* ``db_down_answer_s``: the worst time from a request to its 503 once the
  database is away, a real ``resq-api`` process on MariaDB and PostgreSQL,
  each database stopped (port closed) and hung (nothing answered)
  through a relay (target <= 10 s); ``db_down_non_503``: answers that
  were not a 503 (target 0); ``tox -e bench -- api db-down`` runs it
  alone;
* ``scheduler_overhead_ratio``: the scheduler benchmark's figure (its own
  run). The ResQ filter and weigher read no profiles -- the flavor's
  extra specs carry what they need -- so resq-api adds nothing to it.
"""

import concurrent.futures
import datetime
import json
import statistics
import subprocess
import sys
import threading
import time
import uuid

import sqlalchemy as sa
import webob

from resq_nova.api.db import api as db_api
from resq_nova.api.db import migration
from resq_nova.api.db import models
from resq_nova.api import deploy
from resq_nova.api import wsgi

PROFILES = 1000
TERMS = 10000
READS = 500
PAGE = 100


def _profile(n):
    from tests.unit.resq_profiler import test_profile

    doc = test_profile.make_doc()
    doc['id'] = 'bench-%04d' % n
    return doc


def _app(url):
    conf = wsgi.make_conf(config_files=[])
    conf.set_override('auth_strategy', 'noauth2', 'api')
    conf.set_override('connection', url, 'database')
    db_api.configure(conf)
    migration.upgrade()
    return deploy.deploy(conf)


def _call(app, method, path, body=None, token='admin'):
    req = webob.Request.blank(path, method=method)
    req.headers['X-Auth-Token'] = token
    if body is not None:
        req.body = json.dumps(body).encode()
        req.content_type = 'application/json'
    resp = req.get_response(app)
    if resp.status_int >= 400:
        raise RuntimeError('%s %s: %s' % (method, path, resp.text))
    return resp


def _seed(app):
    for n in range(PROFILES):
        _call(app, 'PUT', '/profiles/bench-%04d' % n,
              {'profile': _profile(n), 'visibility': 'public'})
    now = time.time()
    base = datetime.datetime(2026, 1, 1)
    rows = [{'uuid': str(uuid.uuid4()), 'name': 't%d' % n,
             'project_id': 'p-a' if n % 10 else 'p-b',
             'profile_id': 'bench-%04d' % (n % PROFILES),
             'slo': 'reserved', 'throughput_mpps': 1.0, 'flavors': '[]',
             'servers': '[]', 'status': 'admitted', 'generation': 0,
             'created_at': base + datetime.timedelta(seconds=n),
             'updated_at': base + datetime.timedelta(seconds=n)}
            for n in range(TERMS)]
    with db_api.get_engine().begin() as conn:
        conn.execute(sa.insert(models.SloTerm), rows)
    return time.time() - now


def _timed(func, n):
    times = []
    for i in range(n):
        start = time.perf_counter()
        func(i)
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return (statistics.median(times),
            times[min(len(times) - 1, int(len(times) * 0.99))])


def measure(url):
    app = _app(url)
    _seed(app)
    get50, get99 = _timed(lambda i: _call(
        app, 'GET', '/profiles/bench-%04d' % (i * 7 % PROFILES),
        token='u:p-a'), READS)
    _, list99 = _timed(lambda i: _call(
        app, 'GET', '/slo_terms?limit=%d' % PAGE, token='u:p-a'), READS // 5)
    db_api.reset()
    return {'profiles_get_p50_ms': round(get50, 3),
            'profiles_get_p99_ms': round(get99, 3),
            'terms_list_p99_ms': round(list99, 3)}


def _mariadb():
    from tests.fixtures import database

    skipped = []
    fix = database.Database('mysql', lambda why: skipped.append(why) or
                            (_ for _ in ()).throw(RuntimeError(why)))
    try:
        fix.setUp()
    except RuntimeError:
        return None, None, skipped[0]
    return fix, fix.url, None


def admit_race(admissions=100, hosts=3, ways=3):
    """Racing claims in a real Placement; (overcommitted, claimed)."""
    from placement.tests.functional.fixtures import placement as pfix

    from resq_agent import reporter
    from resq_common import cache_domain
    from resq_common.clients import placement as placement_client

    fixture = pfix.PlacementFixture()
    fixture.setUp()
    try:
        client = placement_client.PlacementClient.for_endpoint(
            fixture.endpoint)
        domains = []
        for h in range(hosts):
            root = str(uuid.uuid4())
            client.ensure_provider(root, 'cn%d' % h)
            domains += list(reporter.report(client, 'cn%d' % h, [
                cache_domain.CacheDomain(0, 20, num_closids=4)]).values())

        # Placement's in-process fixture runs on one in-memory SQLite
        # connection, so HTTP calls are serialised by a lock; the race is
        # in the decisions: every admission reads the cluster before any
        # claims (a barrier), so all decide on the same stale view, then
        # claim, and on a refusal read again and try the next domain.
        lock = threading.Lock()
        barrier = threading.Barrier(admissions)

        def room(rp):
            with lock:
                inv = client.get_inventories(rp)
                used = client.get_usages(rp)
            return min(
                (inv['CUSTOM_LLC_WAY']['total']
                 - inv['CUSTOM_LLC_WAY']['reserved']
                 - used.get('CUSTOM_LLC_WAY', 0)) // ways,
                inv['CUSTOM_LLC_CLOS']['total']
                - inv['CUSTOM_LLC_CLOS'].get('reserved', 0)
                - used.get('CUSTOM_LLC_CLOS', 0))

        def claim(rp):
            with lock:
                resp = client._adapter.put(
                    '/allocations/%s' % uuid.uuid4(), json={
                        'allocations': {rp: {'resources': {
                            'CUSTOM_LLC_WAY': ways, 'CUSTOM_LLC_CLOS': 1}}},
                        'project_id': 'p', 'user_id': 'u',
                        'consumer_generation': None},
                    microversion='1.28', raise_exc=False)
            return resp.status_code == 204

        def admit(n):
            choices = [rp for rp in domains if room(rp) > 0]
            barrier.wait()
            for _ in range(3):
                if not choices:
                    return False
                if claim(choices[0]):
                    return True
                choices = [rp for rp in domains if room(rp) > 0]
            return False

        with concurrent.futures.ThreadPoolExecutor(admissions) as pool:
            claimed = sum(pool.map(admit, range(admissions)))
        over = 0
        for rp in domains:
            inv = client.get_inventories(rp)
            used = client.get_usages(rp)
            for rc in ('CUSTOM_LLC_WAY', 'CUSTOM_LLC_CLOS'):
                if used.get(rc, 0) > inv[rc]['total'] - inv[rc].get(
                        'reserved', 0):
                    over += 1
                    break
        return over, claimed
    finally:
        fixture.cleanUp()


def _scheduler_ratio():
    # 1,000 hosts, Nova's own pass against the ResQ plugins' (the
    # scheduler benchmark's full run covers 10,000 hosts and four passes).
    out = subprocess.run([sys.executable, '-m', 'benchmarks', 'scheduler',
                          '--hosts', '1000', '--configs', 'nova,resq'],
                         capture_output=True, text=True, timeout=1800)
    last = out.stdout.strip().splitlines()[-1]
    return json.loads(last)['overhead_ratio']


def optimizer_stop(runs=3):
    """Seconds from SIGTERM to exit of ``resq-optimizer run``, broker down.

    :returns: ``(worst, mean, rounds started after a SIGTERM)``.
    """
    import tempfile

    from tests.fixtures import optimizer_stop as fixture

    times, late = [], 0
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            run = fixture.Run(tmp)
            try:
                if not run.wait_rounds(1):
                    raise RuntimeError('resq-optimizer run did not start a '
                                       'round: %s' % run.text()[-2000:])
                took, _rc, after = run.stop(timeout=120)
            finally:
                run.close()
        times.append(took if took is not None else float('inf'))
        late += after.count(fixture.ROUND)
    return max(times), sum(times) / len(times), late


# How long the database-away benchmark waits for an answer.
NO_ANSWER_S = 120


def _db_down_case(backend, how):
    """Seconds to the 503 once the database is away, and the answer.

    A real ``resq-api`` process on a database of its own, reached through
    :class:`tests.fixtures.db_proxy.Relay`: a first request is served
    (200), then the relay stops the database (``refuse``: stopped, the
    port closed; ``hang``: everything held, nothing answered) and the next
    request is timed to its answer.
    """
    import os
    import tempfile

    import requests

    from tests.fixtures import database
    from tests.fixtures import db_proxy
    from tests.fixtures import http_process

    db = database.Migrated(backend, lambda why: (_ for _ in ()).throw(
        RuntimeError(why)))
    db.setUp()
    relay = db_proxy.Relay(5432 if backend == 'postgresql' else 3306)
    proc = None
    try:
        db_api.reset()
        url = db.url.replace(':3306/', ':%d/' % relay.port).replace(
            ':5432/', ':%d/' % relay.port)
        with tempfile.TemporaryDirectory() as tmp:
            conf = os.path.join(tmp, 'resq-api.conf')
            with open(conf, 'w') as f:
                f.write('[api]\nauth_strategy = noauth2\n'
                        '[database]\nconnection = %s\n' % url)
            port = http_process.free_port()
            endpoint = 'http://127.0.0.1:%d' % port
            log = open(os.path.join(tmp, 'resq-api.log'), 'w+')
            proc = subprocess.Popen(
                [os.path.join(os.path.dirname(sys.executable), 'resq-api'),
                 '--config-file', conf, '--port', str(port)],
                stdout=log, stderr=subprocess.STDOUT)
            deadline = time.monotonic() + 120
            while True:
                try:
                    if requests.get(endpoint, timeout=5).ok:
                        break
                except requests.RequestException:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError('resq-api did not start: %s'
                                       % http_process.read_log(log)[-2000:])
                time.sleep(0.3)
            headers = {'X-Auth-Token': 'admin'}
            first = requests.get(endpoint + '/profiles', headers=headers,
                                 timeout=60)
            if first.status_code != 200:
                raise RuntimeError('resq-api did not serve before the '
                                   'database went away: %s' % first.text)
            getattr(relay, how)()
            started = time.monotonic()
            try:
                resp = requests.get(endpoint + '/profiles', headers=headers,
                                    timeout=NO_ANSWER_S)
            except requests.RequestException as exc:
                # No answer at all: the figure is the wait, and the row
                # says what the client saw.
                log.close()
                return (time.monotonic() - started,
                        'none (%s)' % type(exc).__name__, None)
            took = time.monotonic() - started
            log.close()
            return took, resp.status_code, resp.headers.get('Retry-After')
    finally:
        if proc is not None:
            http_process.stop(proc)
        relay.close()
        db.cleanUp()


def _print_db_down(rows):
    print('database away (a real resq-api process; target: 503 with '
          'Retry-After within 10 s):')
    print('%-11s %-7s %9s %7s %12s' % ('backend', 'how', 'answer s',
                                       'status', 'Retry-After'))
    for backend, how, took, status, retry in rows:
        print('%-11s %-7s %9s %7s %12s' % (
            backend, how, '-' if took is None else '%.2f' % took, status,
            retry))


def db_down():
    """``db_down_answer_s``: the worst time to a 503, database away.

    :returns: ``(figures, rows)``; each row ``(backend, how, seconds,
        status, Retry-After)``.
    """
    rows = []
    for backend in ('mysql', 'postgresql'):
        for how in ('refuse', 'hang'):
            try:
                took, status, retry = _db_down_case(backend, how)
            except RuntimeError as exc:
                rows.append((backend, how, None, str(exc)[:200], None))
                continue
            rows.append((backend, how, took, status, retry))
    measured = [r for r in rows if r[2] is not None]
    figures = {
        'db_down_answer_s': round(max(r[2] for r in measured), 2)
        if measured else None,
        'db_down_non_503': sum(1 for r in rows if r[3] != 503),
    }
    for backend, how, took, _status, _retry in measured:
        figures['db_down_%s_%s_s' % (backend, how)] = round(took, 2)
    return figures, rows


def main(argv):
    from benchmarks import api_bursts

    if argv[:1] == ['bursts']:
        print(json.dumps(api_bursts.report(*api_bursts.run()),
                         sort_keys=True))
        return 0
    if '--fleet' in argv:
        from benchmarks import api_fleet

        return api_fleet.main(argv)
    if argv[:1] == ['db-down']:
        down, rows = db_down()
        _print_db_down(rows)
        print(json.dumps(down, sort_keys=True))
        return 0
    results = {'sqlite': measure('sqlite:////tmp/resq-bench-%s.sqlite'
                                 % uuid.uuid4().hex[:8])}
    fix, url, why = _mariadb()
    if url:
        try:
            results['mariadb'] = measure(url)
        finally:
            fix.cleanUp()
    over, claimed = admit_race()
    ratio = _scheduler_ratio()
    bursts = api_bursts.run()
    stop_worst, stop_mean, stop_late = optimizer_stop()
    down, down_rows = db_down()
    print('resq-api in-process: %d profiles, %d terms stored'
          % (PROFILES, TERMS))
    print('%-10s %14s %14s %16s' % ('backend', 'GET profile p50',
                                    'p99 (ms)', 'terms page p99'))
    for name, r in results.items():
        print('%-10s %14.3f %14.3f %16.3f' % (
            name, r['profiles_get_p50_ms'], r['profiles_get_p99_ms'],
            r['terms_list_p99_ms']))
    if why:
        print('mariadb: not measured (%s)' % why)
    print('100 racing admissions on 3 cache domains: %d claimed, %d domains '
          'over-committed (target 0)' % (claimed, over))
    print('scheduler overhead ratio %.3f at 1,000 hosts (target <= 1.05; '
          'the plugins read no profiles)' % ratio)
    print('resq-optimizer run, broker down: SIGTERM to exit %.1f s worst, '
          '%.1f s mean of 3 (target <= 10); rounds started after SIGTERM: '
          '%d (target 0)' % (stop_worst, stop_mean, stop_late))
    _print_db_down(down_rows)
    bursts = api_bursts.report(*bursts)
    figures = dict(results['sqlite'])
    figures.update(down)
    figures.update({'backend': 'sqlite', 'profiles': PROFILES,
                    'terms': TERMS, 'concurrent_admit_overcommit': over,
                    'concurrent_admit_claimed': claimed,
                    'scheduler_overhead_ratio': ratio,
                    'optimizer_stop_s': round(stop_worst, 2),
                    'optimizer_stop_mean_s': round(stop_mean, 2),
                    'optimizer_rounds_after_stop': stop_late})
    if 'mariadb' in results:
        figures.update({'mariadb_' + k: v
                        for k, v in results['mariadb'].items()})
    figures.update(bursts)
    print(json.dumps(figures, sort_keys=True))
    return 0
