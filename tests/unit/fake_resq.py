"""An in-memory stand-in for resq-api's isolation and hosts, for unit tests
that inject failures (the functional tests drive the real API)."""

from resq_common.clients import resq


class FakeResQ:

    def __init__(self):
        self.isolation = {}     # uuid -> record
        self.hosts = {}         # hostname -> report
        self.calls = []
        self.fail = None        # exception raised by the next calls
        self.fail_times = None  # how many calls fail (None: all)

    def _maybe_fail(self, call):
        self.calls.append(call)
        if self.fail is not None:
            if self.fail_times is not None:
                self.fail_times -= 1
                if self.fail_times < 0:
                    self.fail = self.fail_times = None
                    return
            raise self.fail

    @staticmethod
    def down():
        return resq.ResQAPIUnavailable(method='PUT', url='/x',
                                       reason='connection refused')

    def set_isolation(self, server_uuid, status, host, detail=''):
        self._maybe_fail(('set_isolation', server_uuid, status, host))
        record = {'server_uuid': server_uuid, 'status': status,
                  'host': host, 'detail': detail}
        self.isolation[server_uuid] = record
        return dict(record)

    def get_isolation(self, server_uuid):
        self._maybe_fail(('get_isolation', server_uuid))
        record = self.isolation.get(server_uuid)
        return dict(record) if record else None

    def list_isolation(self, status=None, host=None):
        self._maybe_fail(('list_isolation', status, host))
        return [dict(r) for r in self.isolation.values()
                if (status is None or r['status'] == status)
                and (host is None or r['host'] == host)]

    def report_host(self, hostname, report):
        self._maybe_fail(('report_host', hostname))
        self.hosts[hostname] = report
        return dict(report)

    def heartbeat_host(self, hostname):
        """resq-api 1.2's heartbeat: the host's report must be stored."""
        self._maybe_fail(('heartbeat_host', hostname))
        if hostname not in self.hosts:
            raise resq.HostNotReported(
                method='PUT', url='/hosts/%s/heartbeat' % hostname,
                reason='404 no report', status=404,
                code=resq.HOST_NOT_FOUND)
        self.beats = getattr(self, 'beats', 0) + 1
