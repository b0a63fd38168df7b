"""A fleet of agents reporting to resq-api under uwsgi (issue 44).

``tox -e bench -- api --fleet [--duration S] [--short] [--backends ...]``
prints a table and ends with one JSON line. Per backend (MariaDB and
PostgreSQL, a throw-away database each on the machine's servers):

* resq-api is served by real uwsgi with devstack's settings (the uwsgi
  file devstack's ``write_uwsgi_config`` and the plugin write:
  :data:`UWSGI`, ``processes`` :data:`PROCESSES` as the issue measured,
  ``threads`` 1, the plugin's ``listen``), behind uwsgi's HTTP router
  on its unix socket, standing in for devstack's Apache; noauth2 (no
  Keystone here), so keystonemiddleware's token check is not in it;
* 10,000 hosts are stored (each one's full report), 100 public profiles
  and 1,000 SLO terms of one project;
* an open-loop load generator (asyncio, one connection a request as
  devstack's ``Connection: close`` makes it) sends host writes at a
  given rate, Poisson arrivals, each timed from when it was due (so a
  late generator or a queue counts): :data:`CHANGED` of them full
  reports at microversion 1.1 (2 cache domains, 4 servers), the rest
  heartbeats at 1.2, each of a host drawn from the 10,000;
* 50 readers, each ``GET /profiles/{id}`` or a page of ``GET
  /slo_terms`` (100 terms) in turn, about one a second each
  (:data:`READER_PERIOD_S`, jittered): the schedulers and admissions;
* the optimizer's cycle once a minute, as
  :class:`resq_nova.optimizer.apistore.ServiceStore` calls resq-api:
  ``POST /snapshots``, ``POST /plans``, ``POST /plans/{id}/apply``,
  ``PUT /plans/{id}/result``; its seconds are ``plan_cycle_*``.

The offered rate steps up (:data:`STEPS`, ``--step`` seconds each) until
a step misses p99 <= 100 ms, errs, or falls behind; the highest step
that passed is held for ``--duration`` seconds (300 by default, with
readers and the optimizer), then twice that rate is offered for a short
while (``overload_*``: what a client gets past saturation: 503 with
Retry-After, and how long the slowest answer took).

Figures per backend (``mariadb_``, ``postgresql_``):
``report_rate_held`` (host writes a second answered 2xx during the hold,
when its p99 <= 100 ms; target >= 500), ``report_p99_ms`` (<= 100),
``read_p99_ms`` (<= 50), ``server_errors`` (5xx and refused or dropped
connections below saturation; target 0), ``plan_cycle_p99_s``, and the
step table. ``load_before``/``load_after``: ``uptime``'s load averages,
beside the busiest other processes (the machine may be shared).
"""

import argparse
import asyncio
import datetime
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid

BACKENDS = (('mariadb', 'mysql'), ('postgresql', 'postgresql'))
HOSTS = 10000
PROFILES = 100
TERMS = 1000
PROCESSES = 4
THREADS = 1
# The share of host writes that are full reports (the rest heartbeats): a
# tenth is far more change than a cloud has (a boot, delete or move every
# ten minutes on every host), so the full reports weigh their share.
CHANGED = 0.1
READERS = 50
READER_PERIOD_S = 1.0
OPTIMIZER_PERIOD_S = 60
STEPS = (200, 350, 500, 650, 800, 1000, 1250, 1500, 1800)
TARGET_P99_MS = 100
TIMEOUT_S = 30
TOKEN = 'admin'
READER_TOKEN = 'reader:p-a'
V_REPORT = 'resq 1.1'
V_HEARTBEAT = 'resq 1.2'
# uwsgi as devstack's write_uwsgi_config writes it, and what the plugin
# (devstack/lib/resq, configure_resq_api) adds.
UWSGI = {
    'module': 'resq_nova.api.wsgi:application',
    'master': 'true', 'die-on-term': 'true', 'exit-on-reload': 'false',
    'enable-threads': 'true', 'thunder-lock': 'true',
    'buffer-size': '65535', 'add-header': 'Connection: close',
    'lazy-apps': 'true', 'need-app': 'true',
}


def _plugin_uwsgi_options():
    """What devstack's plugin sets in resq-api's uwsgi file besides.

    Read from ``devstack/lib/resq`` (its ``iniset $RESQ_API_UWSGI_CONF
    uwsgi ...`` lines with a literal value), so the benchmark serves as
    the plugin configures.
    """
    import re

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found = {}
    with open(os.path.join(root, 'devstack', 'lib', 'resq')) as f:
        for line in f:
            m = re.match(r'\s*iniset \$RESQ_API_UWSGI_CONF uwsgi (\S+) '
                         r'([^$"]+?)\s*$', line)
            if m:
                found[m.group(1)] = m.group(2)
    return found


def _report(n):
    return {
        'domains': [{'id': d, 'ways_total': 11, 'ways_used': 6,
                     'ways_leased': 2, 'clos_total': 15, 'clos_used': 2,
                     'cores_total': 20, 'cores_used': 8,
                     'cores_leased': 2} for d in (0, 1)],
        'agent_version': '1.2.0',
        'instances': [{'server_uuid': str(uuid.UUID(int=n * 8 + k)),
                       'domain': k % 2, 'ways': 3,
                       'llc_occupancy_bytes': 4000000 + n,
                       'mbm_total_bytes_per_s': 1.0e9 + k}
                      for k in range(4)],
    }


def _hostname(n):
    return 'cmp-%05d.fleet.example' % n


def percentile(values, q):
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * q))]


def _seed(url):
    """Hosts, profiles and terms straight into the migrated database."""
    import sqlalchemy as sa

    from resq_nova.api.db import models
    from tests.unit.resq_profiler import test_profile

    now = datetime.datetime.now(datetime.timezone.utc).replace(
        tzinfo=None, microsecond=0)
    engine = sa.create_engine(url)
    hosts = []
    for n in range(HOSTS):
        rep = _report(n)
        inst = rep.pop('instances')
        hosts.append({'hostname': _hostname(n),
                      'report': json.dumps(rep, sort_keys=True),
                      'instances': json.dumps(inst), 'updated_at': now})
    profiles = []
    for n in range(PROFILES):
        doc = test_profile.make_doc()
        doc['id'] = 'fleet-%03d' % n
        nf = doc.get('nf', {}).get('name', '')
        profiles.append({'id': doc['id'], 'name': nf or doc['id'],
                         'nf': nf, 'visibility': 'public',
                         'project_id': None, 'generation': 0,
                         'document': json.dumps(doc, sort_keys=True),
                         'created_at': now, 'updated_at': now})
    base = datetime.datetime(2026, 1, 1)
    terms = [{'uuid': str(uuid.uuid4()), 'name': 't%d' % n,
              'project_id': 'p-a', 'profile_id': 'fleet-%03d' % (
                  n % PROFILES), 'slo': 'reserved', 'throughput_mpps': 1.0,
              'flavors': '[]', 'servers': '[]', 'status': 'admitted',
              'generation': 0,
              'created_at': base + datetime.timedelta(seconds=n),
              'updated_at': base + datetime.timedelta(seconds=n)}
             for n in range(TERMS)]
    with engine.begin() as conn:
        for start in range(0, HOSTS, 1000):
            conn.execute(sa.insert(models.Host), hosts[start:start + 1000])
        conn.execute(sa.insert(models.Profile), profiles)
        conn.execute(sa.insert(models.SloTerm), terms)
    engine.dispose()


class Server:
    """resq-api under uwsgi on a migrated, seeded database."""

    def __init__(self, tmp, url, processes=PROCESSES, threads=THREADS,
                 extra=None):
        self.tmp = tmp
        self.url = url
        self.processes = processes
        self.threads = threads
        self.extra = extra or {}
        self.proc = None

    def start(self):
        import requests

        from tests.fixtures import http_process

        conf = os.path.join(self.tmp, 'resq-api.conf')
        with open(conf, 'w') as f:
            f.write('[DEFAULT]\nuse_stderr = true\n'
                    '[api]\nauth_strategy = noauth2\n'
                    '[database]\nconnection = %s\n' % self.url)
        ini = os.path.join(self.tmp, 'resq-api-uwsgi.ini')
        options = dict(UWSGI)
        options.update(_plugin_uwsgi_options())
        options.update(processes=str(self.processes),
                       threads=str(self.threads),
                       socket=os.path.join(self.tmp, 'resq-api.socket'),
                       env='RESQ_API_CONFIG=%s' % conf)
        options.update(self.extra)
        with open(ini, 'w') as f:
            f.write('[uwsgi]\n')
            for key, value in options.items():
                f.write('%s = %s\n' % (key, value))
        self.port = http_process.free_port()
        self.endpoint = 'http://127.0.0.1:%d' % self.port
        uwsgi = os.path.join(os.path.dirname(sys.executable), 'uwsgi')
        self.log = open(os.path.join(self.tmp, 'uwsgi.log'), 'w+')
        env = dict(os.environ)
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env['PYTHONPATH'] = root + os.pathsep + env.get('PYTHONPATH', '')
        self.proc = subprocess.Popen(
            [uwsgi, '--ini', ini, '--http', '127.0.0.1:%d' % self.port,
             '--disable-logging'],
            stdout=self.log, stderr=subprocess.STDOUT, cwd=self.tmp,
            env=env)
        deadline = time.monotonic() + 180
        ready = 0
        while time.monotonic() < deadline:
            try:
                if requests.get(self.endpoint + '/profiles', timeout=10,
                                headers={'X-Auth-Token': TOKEN}).ok:
                    ready += 1
                    # Every worker loads the application lazily.
                    if ready > self.processes * 2:
                        return
                    continue
            except requests.RequestException:
                pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.5)
        raise RuntimeError('uwsgi did not serve resq-api: %s'
                           % http_process.read_log(self.log)[-3000:])

    def stop(self):
        from tests.fixtures import http_process

        if self.proc is not None:
            http_process.stop(self.proc)
            self.log.close()
            self.proc = None


_TICK = os.sysconf('SC_CLK_TCK')


def _processes():
    """``{pid: (parent pid, command, CPU seconds)}`` of every process."""
    found = {}
    for name in os.listdir('/proc'):
        if not name.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % name) as f:
                stat = f.read()
        except OSError:
            continue
        comm = stat[stat.index('(') + 1:stat.rindex(')')]
        fields = stat[stat.rindex(')') + 2:].split()
        found[int(name)] = (int(fields[1]), comm,
                            (int(fields[11]) + int(fields[12])) / _TICK)
    return found


class CPU:
    """CPU seconds of resq-api's workers and of the database server.

    The workers are uwsgi's processes; the database server's are
    ``mariadbd``/``mysqld`` or every ``postgres`` process (a backend a
    connection): a server the machine shares, so its figure includes
    what other users of that server ran meanwhile.
    """

    DB = {'mysql': ('mariadbd', 'mysqld'), 'postgresql': ('postgres',)}

    def __init__(self, master_pid, backend):
        self.master = master_pid
        self.db = self.DB[backend]

    def sample(self):
        procs = _processes()
        api = {pid: cpu for pid, (ppid, _, cpu) in procs.items()
               if pid == self.master or ppid == self.master}
        db = {pid: cpu for pid, (_, comm, cpu) in procs.items()
              if comm in self.db}
        return api, db

    @staticmethod
    def used(before, after):
        """CPU seconds between two samples: ``(api, db)``."""
        return tuple(sum(cpu - b.get(pid, 0.0) for pid, cpu in a.items())
                     for b, a in zip(before, after))


class Outcome:
    __slots__ = ('kind', 'status', 'ms', 'retry_after', 'error')

    def __init__(self, kind, status, ms, retry_after=None, error=None):
        self.kind = kind
        self.status = status
        self.ms = ms
        self.retry_after = retry_after
        self.error = error


class Client:
    """HTTP/1.1 over asyncio streams, one connection a request."""

    def __init__(self, port):
        self.port = port

    async def call(self, method, path, body=None, token=TOKEN,
                   version=None):
        payload = json.dumps(body).encode() if body is not None else b''
        head = ['%s %s HTTP/1.1' % (method, path), 'Host: 127.0.0.1',
                'X-Auth-Token: %s' % token, 'Accept: application/json',
                'Connection: close', 'Content-Length: %d' % len(payload)]
        if body is not None:
            head.append('Content-Type: application/json')
        if version:
            head.append('OpenStack-API-Version: %s' % version)
        data = ('\r\n'.join(head) + '\r\n\r\n').encode() + payload
        reader, writer = await asyncio.open_connection('127.0.0.1',
                                                       self.port)
        try:
            writer.write(data)
            await writer.drain()
            raw = await reader.read()
        finally:
            writer.close()
        head, _, content = raw.partition(b'\r\n\r\n')
        lines = head.decode('latin-1').split('\r\n')
        if not lines or not lines[0].startswith('HTTP/'):
            raise ConnectionError('no HTTP answer (%r)' % raw[:80])
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            key, _, value = line.partition(':')
            headers[key.strip().lower()] = value.strip()
        return status, headers, content

    async def timed(self, kind, due, method, path, body=None, token=TOKEN,
                    version=None):
        """One request, timed from ``due`` (loop time) to its answer."""
        loop = asyncio.get_running_loop()
        try:
            status, headers, _ = await asyncio.wait_for(
                self.call(method, path, body, token, version), TIMEOUT_S)
        except (OSError, ConnectionError, asyncio.TimeoutError) as exc:
            return Outcome(kind, 0, (loop.time() - due) * 1000,
                           error=type(exc).__name__)
        return Outcome(kind, status, (loop.time() - due) * 1000,
                       retry_after=headers.get('retry-after'))


class Fleet:
    """The load on one served resq-api."""

    def __init__(self, client, seed=44, cpu=None, heartbeats=True):
        self.client = client
        self.cpu = cpu
        self.heartbeats = heartbeats
        self.random = random.Random(seed)
        self.reads = []
        self.cycles = []
        self.cycle_errors = 0
        self._stop = None

    def _write(self, due):
        n = self.random.randrange(HOSTS)
        path = '/hosts/%s' % _hostname(n)
        if not self.heartbeats or self.random.random() < CHANGED:
            return self.client.timed('report', due, 'PUT', path,
                                     _report(n), version=V_REPORT)
        return self.client.timed('heartbeat', due, 'PUT',
                                 path + '/heartbeat', version=V_HEARTBEAT)

    async def writes(self, rate, seconds):
        """Host writes at ``rate`` a second for ``seconds``; outcomes.

        ``self.last_cpu``: CPU seconds of resq-api and of the database
        server meanwhile, per request answered (readers' too).
        """
        before = self.cpu.sample() if self.cpu else None
        served = len(self.reads)
        outcomes = await self._writes(rate, seconds)
        if before is not None:
            api, db = CPU.used(before, self.cpu.sample())
            n = sum(1 for o in outcomes if o.status) + \
                len(self.reads) - served
            self.last_cpu = (api * 1000 / max(n, 1), db * 1000 / max(n, 1))
        return outcomes

    async def _writes(self, rate, seconds):
        loop = asyncio.get_running_loop()
        start = loop.time()
        due = start
        tasks = []
        while True:
            due += self.random.expovariate(rate)
            if due - start >= seconds:
                break
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            tasks.append(asyncio.ensure_future(self._write(due)))
        return await asyncio.gather(*tasks)

    async def _reader(self, n, rnd):
        loop = asyncio.get_running_loop()
        await asyncio.sleep(rnd.uniform(0, READER_PERIOD_S))
        turn = n
        while not self._stop.is_set():
            turn += 1
            if turn % 2:
                path = '/profiles/fleet-%03d' % rnd.randrange(PROFILES)
            else:
                path = '/slo_terms?limit=100'
            out = await self.client.timed('read', loop.time(), 'GET', path,
                                          token=READER_TOKEN)
            self.reads.append(out)
            await asyncio.sleep(rnd.uniform(0.5, 1.5) * READER_PERIOD_S)

    async def _optimizer(self):
        loop = asyncio.get_running_loop()
        n = 0
        while not self._stop.is_set():
            n += 1
            ident = 'fleet-%s-%d' % (uuid.uuid4().hex[:8], n)
            start = loop.time()
            ok = True
            steps = [
                ('POST', '/snapshots', {'id': ident, 'snapshot': {
                    'hosts': [_hostname(h) for h in range(200)]}}),
                ('POST', '/plans', {'id': ident, 'snapshot_id': ident,
                                    'plan': {'moves': [{
                                        'uuid': str(uuid.uuid4()),
                                        'name': 'vm', 'from_host': 'h1',
                                        'to_host': 'h0'}]}}),
                ('POST', '/plans/%s/apply' % ident,
                 {'applier': 'fleet-optimizer', 'lease': 120}),
                ('PUT', '/plans/%s/result' % ident,
                 {'state': 'applied', 'result': 'fleet'}),
            ]
            for method, path, body in steps:
                out = await self.client.timed('optimizer', loop.time(),
                                              method, path, body)
                if not 200 <= out.status < 300:
                    ok = False
                    self.cycle_errors += 1
                    break
            if ok:
                self.cycles.append(loop.time() - start)
            try:
                await asyncio.wait_for(self._stop.wait(),
                                       OPTIMIZER_PERIOD_S)
            except asyncio.TimeoutError:
                pass

    def start_background(self):
        self._stop = asyncio.Event()
        rnd = random.Random(7)
        self._tasks = [asyncio.ensure_future(self._reader(n, rnd))
                       for n in range(READERS)]
        self._tasks.append(asyncio.ensure_future(self._optimizer()))

    async def stop_background(self):
        self._stop.set()
        await asyncio.gather(*self._tasks)


def summarise(outcomes, seconds):
    ok = [o for o in outcomes if 200 <= o.status < 300]
    ms = [o.ms for o in outcomes]
    return {
        'offered': len(outcomes), 'ok': len(ok),
        'rate': round(len(ok) / seconds, 1),
        'p50_ms': round(percentile(ms, 0.5) or 0, 1),
        'p99_ms': round(percentile(ms, 0.99) or 0, 1),
        'max_ms': round(max(ms) if ms else 0, 1),
        'server_errors': sum(1 for o in outcomes if o.status >= 500),
        'refused': sum(1 for o in outcomes if o.status == 0),
        'status_503': sum(1 for o in outcomes if o.status == 503),
        'with_retry_after': sum(1 for o in outcomes
                                if o.status == 503 and o.retry_after),
        'client_errors': sum(1 for o in outcomes
                             if 400 <= o.status < 500),
        'errors_by_kind': _kinds(outcomes),
    }


def _kinds(outcomes):
    kinds = {}
    for o in outcomes:
        if o.status >= 400 or o.status == 0:
            key = o.error or str(o.status)
            kinds[key] = kinds.get(key, 0) + 1
    return kinds


def _passes(step, rate):
    return (step['p99_ms'] <= TARGET_P99_MS and not step['server_errors']
            and not step['refused'] and not step['client_errors']
            and step['rate'] >= 0.95 * rate)


def _cpu_figures(fleet, into):
    cpu = getattr(fleet, 'last_cpu', None)
    if cpu:
        into['api_cpu_ms_per_request'] = round(cpu[0], 2)
        into['db_cpu_ms_per_request'] = round(cpu[1], 2)


CALIBRATE_RATE = 20
CALIBRATE_S = 15


async def _calibrate(fleet):
    """CPU ms of one host write, and of one read, each alone.

    Before the readers start: writes at :data:`CALIBRATE_RATE` a second,
    then as many reads; what resq-api's workers and the database server
    spent, a request. A figure of the code, not of the machine's load
    (within what a busy machine's caches cost).
    """
    out = {}
    await fleet.writes(CALIBRATE_RATE, CALIBRATE_S)
    out['write'] = fleet.last_cpu
    loop = asyncio.get_running_loop()
    before = fleet.cpu.sample()
    start = loop.time()
    tasks = []
    for n in range(CALIBRATE_RATE * CALIBRATE_S):
        due = start + n / CALIBRATE_RATE
        await asyncio.sleep(max(0, due - loop.time()))
        path = ('/profiles/fleet-%03d' % (n % PROFILES) if n % 2
                else '/slo_terms?limit=100')
        tasks.append(asyncio.ensure_future(fleet.client.timed(
            'read', due, 'GET', path, token=READER_TOKEN)))
    outs = await asyncio.gather(*tasks)
    api, db = CPU.used(before, fleet.cpu.sample())
    n = max(1, sum(1 for o in outs if o.status))
    out['read'] = (api * 1000 / n, db * 1000 / n)
    return out


async def _drive(port, duration, step_s, overload_s, steps, cpu=None,
                 heartbeats=True):
    client = Client(port)
    fleet = Fleet(client, cpu=cpu, heartbeats=heartbeats)
    calibration = await _calibrate(fleet) if cpu else None
    if calibration:
        print('  alone: a host write costs resq-api %.2f ms and the database '
              '%.2f ms of CPU; a read %.2f and %.2f ms' % (
                  calibration['write'] + calibration['read']), flush=True)
    fleet.start_background()
    table = []
    held = None
    try:
        for rate in steps:
            outcomes = await fleet.writes(rate, step_s)
            step = summarise(outcomes, step_s)
            step['offered_rate'] = rate
            step['passed'] = _passes(step, rate)
            _cpu_figures(fleet, step)
            table.append(step)
            print('  step %5d/s: %7.1f/s ok, p50 %7.1f ms, p99 %8.1f ms, '
                  'CPU ms a request: resq-api %s, database %s; errors %s, '
                  'load %s' % (
                      rate, step['rate'], step['p50_ms'], step['p99_ms'],
                      step.get('api_cpu_ms_per_request'),
                      step.get('db_cpu_ms_per_request'),
                      step['errors_by_kind'] or 'none', _load()),
                  flush=True)
            if not step['passed']:
                break
            held = rate
        fleet.reads.clear()
        fleet.cycles.clear()
        hold = None
        if held is not None:
            outcomes = await fleet.writes(held, duration)
            hold = summarise(outcomes, duration)
            hold['offered_rate'] = held
            hold['passed'] = _passes(hold, held)
            _cpu_figures(fleet, hold)
            hold['heartbeat_p99_ms'] = round(percentile(
                [o.ms for o in outcomes if o.kind == 'heartbeat'], 0.99)
                or 0, 1)
            hold['report_p99_ms'] = round(percentile(
                [o.ms for o in outcomes if o.kind == 'report'], 0.99)
                or 0, 1)
        reads = list(fleet.reads)
        cycles = list(fleet.cycles)
        over_rate = 2 * (held or steps[0])
        outcomes = await fleet.writes(over_rate, overload_s)
        overload = summarise(outcomes, overload_s)
        overload['offered_rate'] = over_rate
        print('  overload %5d/s: %7.1f/s ok, 503 %d (with Retry-After %d), '
              'other errors %s, slowest %.1f s' % (
                  over_rate, overload['rate'], overload['status_503'],
                  overload['with_retry_after'], overload['errors_by_kind'],
                  overload['max_ms'] / 1000), flush=True)
    finally:
        await fleet.stop_background()
    return {'steps': table, 'held': held, 'hold': hold,
            'calibration': calibration,
            'reads': summarise(reads, duration) if reads else None,
            'cycles': cycles, 'cycle_errors': fleet.cycle_errors,
            'overload': overload}


def measure(backend, duration, step_s, overload_s, steps=STEPS,
            heartbeats=True):
    """One backend's figures (a throw-away database, uwsgi on it)."""
    from tests.fixtures import database

    skipped = []

    def skip(why):
        skipped.append(why)
        raise RuntimeError(why)

    db = database.Migrated(backend, skip)
    try:
        db.setUp()
    except RuntimeError:
        return None, skipped[0]
    try:
        _seed(db.url)
        with tempfile.TemporaryDirectory() as tmp:
            server = Server(tmp, db.url)
            server.start()
            try:
                cpu = CPU(server.proc.pid, backend)
                result = asyncio.run(_drive(server.port, duration, step_s,
                                            overload_s, steps, cpu,
                                            heartbeats))
            finally:
                server.stop()
    finally:
        db.cleanUp()
    return result, None


def figures(name, result):
    hold = result['hold'] or {}
    reads = result['reads'] or {}
    over = result['overload']
    cycles = result['cycles']
    passed = bool(hold.get('passed'))
    cal = result.get('calibration') or {}
    write = cal.get('write') or (None, None)
    read = cal.get('read') or (None, None)
    out = {
        'write_api_cpu_ms': round(write[0], 2) if write[0] else None,
        'write_db_cpu_ms': round(write[1], 2) if write[1] else None,
        'read_api_cpu_ms': round(read[0], 2) if read[0] else None,
        'read_db_cpu_ms': round(read[1], 2) if read[1] else None,
        # What two idle cores would serve of host writes alone, resq-api
        # and its database on them (the load generator elsewhere).
        'write_capacity_2_cores': round(2000 / (write[0] + write[1]))
        if write[0] else None,
        'api_cpu_ms_per_request': hold.get('api_cpu_ms_per_request'),
        'db_cpu_ms_per_request': hold.get('db_cpu_ms_per_request'),
        'report_rate_held': hold.get('rate', 0) if passed else max(
            [s['rate'] for s in result['steps'] if s['passed']],
            default=0),
        'report_rate_offered': result['held'],
        'report_p99_ms': hold.get('p99_ms'),
        'heartbeat_p99_ms': hold.get('heartbeat_p99_ms'),
        'full_report_p99_ms': hold.get('report_p99_ms'),
        'read_p99_ms': reads.get('p99_ms'),
        'reads': reads.get('ok'),
        'server_errors': (hold.get('server_errors', 0)
                          + hold.get('refused', 0)
                          + reads.get('server_errors', 0)
                          + reads.get('refused', 0)
                          + result['cycle_errors']),
        'plan_cycle_p99_s': round(percentile(cycles, 0.99), 3)
        if cycles else None,
        'plan_cycles': len(cycles),
        'overload_rate_offered': over['offered_rate'],
        'overload_ok_rate': over['rate'],
        'overload_503': over['status_503'],
        'overload_503_with_retry_after': over['with_retry_after'],
        'overload_other_errors': (over['server_errors']
                                  - over['status_503'] + over['refused']),
        'overload_max_s': round(over['max_ms'] / 1000, 2),
        'steps': [[s['offered_rate'], s['rate'], s['p99_ms'],
                   s['server_errors'] + s['refused'],
                   s.get('api_cpu_ms_per_request'),
                   s.get('db_cpu_ms_per_request')]
                  for s in result['steps']],
    }
    return {'%s_%s' % (name, k): v for k, v in out.items()}


def _load():
    with open('/proc/loadavg') as f:
        return ' '.join(f.read().split()[:3])


def _busy_others():
    """The busiest processes not of this benchmark (the shared machine)."""
    out = subprocess.run(['ps', '-eo', 'pcpu,comm', '--sort=-pcpu'],
                         capture_output=True, text=True).stdout
    rows = [line.split(None, 1) for line in out.splitlines()[1:8]]
    return ['%s %s%%' % (r[1], r[0]) for r in rows if len(r) == 2]


def main(argv):
    parser = argparse.ArgumentParser(prog='benchmarks api --fleet')
    parser.add_argument('--fleet', action='store_true')
    parser.add_argument('--duration', type=float, default=300,
                        help='seconds at the held rate (default 300)')
    parser.add_argument('--step', type=float, default=30,
                        help='seconds of each step of the offered rate')
    parser.add_argument('--short', action='store_true',
                        help='a try-out: 60 s held, 10 s steps')
    parser.add_argument('--backends', default='mariadb,postgresql')
    parser.add_argument('--no-bursts', action='store_true',
                        help='leave out the 100-client bursts')
    parser.add_argument('--no-heartbeats', action='store_true',
                        help='every host write a full report (agents '
                             'before microversion 1.2)')
    parser.add_argument('--steps', default=None,
                        help='offered rates to step through, comma '
                             'separated (default %s)'
                             % ','.join(map(str, STEPS)))
    args = parser.parse_args(argv)
    duration, step_s, overload_s = args.duration, args.step, 15
    if args.short:
        duration, step_s, overload_s = 60, 10, 10
    figures_out = {'benchmark': 'api-fleet',
                   'fleet_hosts': HOSTS, 'fleet_processes': PROCESSES,
                   'fleet_threads': THREADS, 'fleet_changed_share': CHANGED,
                   'fleet_readers': READERS, 'fleet_duration_s': duration,
                   'load_before': _load(), 'busy_before': _busy_others()}
    wanted = args.backends.split(',')
    steps = tuple(int(r) for r in args.steps.split(',')) if args.steps \
        else STEPS
    rows = {}
    for name, backend in BACKENDS:
        if name not in wanted:
            continue
        print('%s: stepping the offered rate (%g s a step), then %g s held'
              % (name, step_s, duration), flush=True)
        result, why = measure(backend, duration, step_s, overload_s,
                              steps, not args.no_heartbeats)
        if result is None:
            print('%s: not measured (%s)' % (name, why))
            continue
        rows[name] = figures(name, result)
        figures_out.update(rows[name])
    if not args.no_bursts:
        from benchmarks import api_bursts

        figures_out.update(api_bursts.report(*api_bursts.run()))
        rows_b = {r['burst']: r for r in figures_out['burst_rows']}
        for burst in ('plans', 'claims'):
            r = rows_b.get(burst, {})
            if r.get('postgresql_p50_ms'):
                figures_out['burst_%s_p50_mariadb_over_postgresql' % burst] \
                    = round(r['mariadb_p50_ms'] / r['postgresql_p50_ms'], 2)
    figures_out['load_after'] = _load()
    figures_out['busy_after'] = _busy_others()
    figures_out['fleet_heartbeats'] = not args.no_heartbeats
    keys = ('report_rate_held', 'report_p99_ms', 'heartbeat_p99_ms',
            'full_report_p99_ms', 'read_p99_ms', 'server_errors',
            'plan_cycle_p99_s', 'plan_cycles', 'overload_rate_offered',
            'overload_ok_rate', 'overload_503',
            'overload_503_with_retry_after', 'overload_other_errors',
            'overload_max_s', 'api_cpu_ms_per_request',
            'db_cpu_ms_per_request', 'write_api_cpu_ms', 'write_db_cpu_ms',
            'read_api_cpu_ms', 'read_db_cpu_ms', 'write_capacity_2_cores')
    print('resq-api under uwsgi (%d processes, %d thread), %d hosts, %d%% '
          'full reports, %d readers; load %s before, %s after'
          % (PROCESSES, THREADS, HOSTS, CHANGED * 100, READERS,
             figures_out['load_before'], figures_out['load_after']))
    print('%-30s' % 'figure' + ''.join('%14s' % n for n in rows))
    for key in keys:
        print('%-30s' % key + ''.join(
            '%14s' % rows[n].get('%s_%s' % (n, key)) for n in rows))
    print('busiest processes before: %s' % ', '.join(
        figures_out['busy_before']))
    print(json.dumps(figures_out, sort_keys=True))
    return 0
