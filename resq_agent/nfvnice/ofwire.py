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
"""A small OpenFlow 1.3 client for NFVnice's counters and meters.

``ovs-ofctl`` costs a process, a connection and a version negotiation per
call: 5-40 ms each here, so a pass that reads ports and meters and
changes a dozen meters took half a second. This client keeps one
connection to the bridge's management socket and speaks the few messages
NFVnice needs (OpenFlow 1.3, ONF TS-006): port descriptions and
statistics, meter statistics, and meter changes sent in one batch closed
by a barrier. Every reply is checked; an ``OFPT_ERROR`` for a request
raises :class:`WireError` naming the request. Flows (written only when a
chain is installed) still go through ``ovs-ofctl``.
"""

import socket
import struct

VERSION = 0x04
HEADER = struct.Struct('!BBHI')
T_HELLO, T_ERROR, T_ECHO_REQUEST, T_ECHO_REPLY = 0, 1, 2, 3
T_MULTIPART_REQUEST, T_MULTIPART_REPLY = 18, 19
T_BARRIER_REQUEST, T_BARRIER_REPLY = 20, 21
T_METER_MOD = 29
MP_PORT_STATS, MP_METER, MP_PORT_DESC = 4, 9, 13
MPF_MORE = 1
ANY = 0xFFFFFFFF
UNSET = 0xFFFFFFFFFFFFFFFF
METER_ADD, METER_MODIFY, METER_DELETE = 0, 1, 2
MF_KBPS, MF_BURST, MF_STATS = 1, 4, 8
BAND_DROP = 1
PORT_STATS = struct.Struct('!I4x12Q')       # then duration (8 bytes)
PORT_DESC = struct.Struct('!I4x6s2x16s')     # then 32 bytes we skip
METER_STATS = struct.Struct('!IH6xIQQII')
BAND_STATS = struct.Struct('!QQ')
METER_MOD = struct.Struct('!HHI')
BAND_DROP_S = struct.Struct('!HHII4x')
PORT_FIELDS = ('rx_packets', 'tx_packets', 'rx_bytes', 'tx_bytes',
               'rx_dropped', 'tx_dropped')


class WireError(Exception):
    pass


class Client:
    """One OpenFlow 1.3 connection to ``target``.

    ``target`` is ``unix:/path`` or ``tcp:host:port``; the connection is
    opened on first use and again after an error.
    """

    def __init__(self, target, timeout=5.0):
        self.target = target
        self.timeout = timeout
        self._sock = None
        self._xid = 0

    # -- connection --------------------------------------------------------
    def _connect(self):
        if self.target.startswith('unix:'):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            addr = self.target[5:]
        elif self.target.startswith('tcp:'):
            host, port = self.target[4:].rsplit(':', 1)
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            addr = (host, int(port))
        else:
            raise WireError('target %r is neither unix:PATH nor '
                            'tcp:HOST:PORT' % self.target)
        sock.settimeout(self.timeout)
        try:
            sock.connect(addr)
            sock.sendall(HEADER.pack(VERSION, T_HELLO, HEADER.size, 0))
            version, mtype, _, _ = self._read(sock)
            if mtype != T_HELLO:
                raise WireError('the switch answered hello with message '
                                'type %d' % mtype)
        except (OSError, WireError):
            sock.close()
            raise
        self._sock = sock

    def close(self):
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def _read(self, sock=None):
        sock = sock or self._sock
        head = self._exact(sock, HEADER.size)
        version, mtype, length, xid = HEADER.unpack(head)
        body = self._exact(sock, length - HEADER.size)
        if mtype == T_ECHO_REQUEST:
            sock.sendall(HEADER.pack(VERSION, T_ECHO_REPLY, length, xid)
                         + body)
            return self._read(sock)
        return version, mtype, xid, body

    @staticmethod
    def _exact(sock, n):
        data = b''
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            if not chunk:
                raise WireError('the switch closed the connection')
            data += chunk
        return data

    def _message(self, mtype, body=b''):
        self._xid = (self._xid + 1) & 0xFFFFFFFF
        return self._xid, HEADER.pack(VERSION, mtype, HEADER.size + len(body),
                                      self._xid) + body

    def _exchange(self, fn):
        """Run ``fn`` on a live connection; reconnect once if it broke."""
        for attempt in (0, 1):
            try:
                if self._sock is None:
                    self._connect()
                return fn()
            except (OSError, WireError) as exc:
                self.close()
                if attempt or isinstance(exc, RequestRefused):
                    raise WireError('%s: %s' % (self.target, exc))

    # -- multipart --------------------------------------------------------
    def _multipart(self, mp_type, body):
        def run():
            xid, msg = self._message(T_MULTIPART_REQUEST, struct.pack(
                '!HH4x', mp_type, 0) + body)
            self._sock.sendall(msg)
            parts = []
            while True:
                _, mtype, rxid, reply = self._read()
                if rxid != xid:
                    continue
                if mtype == T_ERROR:
                    raise RequestRefused(_error(reply, 'multipart %d'
                                                % mp_type))
                _, flags = struct.unpack('!HH', reply[:4])
                parts.append(reply[8:])
                if not flags & MPF_MORE:
                    return b''.join(parts)
        return self._exchange(run)

    def port_stats(self):
        """``{port name: {counter: int or None}}`` (None: not kept)."""
        names = {}
        desc = self._multipart(MP_PORT_DESC, b'')
        for off in range(0, len(desc), 64):
            port_no, _, name = PORT_DESC.unpack_from(desc, off)
            names[port_no] = name.rstrip(b'\0').decode('utf-8', 'replace')
        stats = self._multipart(MP_PORT_STATS, struct.pack('!I4x', ANY))
        result = {}
        for off in range(0, len(stats), PORT_STATS.size + 8):
            values = PORT_STATS.unpack_from(stats, off)
            name = names.get(values[0])
            if name is None:
                continue
            result[name] = {k: (None if v == UNSET else v)
                            for k, v in zip(PORT_FIELDS, values[1:7])}
        return result

    def meter_stats(self):
        """``{meter id: (packets in, bytes in, dropped by its bands)}``."""
        data = self._multipart(MP_METER, struct.pack('!I4x', ANY))
        result, off = {}, 0
        while off + METER_STATS.size <= len(data):
            meter, length, _, packets, nbytes, _, _ = (
                METER_STATS.unpack_from(data, off))
            dropped = 0
            for band in range(off + METER_STATS.size, off + length,
                              BAND_STATS.size):
                dropped += BAND_STATS.unpack_from(data, band)[0]
            result[meter] = (packets, nbytes, dropped)
            off += max(length, METER_STATS.size)
        return result

    # -- meters -----------------------------------------------------------
    def meter_mods(self, mods):
        """Apply ``[(command, meter id, rate kbps, burst kb)]`` in order.

        One write and one barrier for the batch. :returns: ``{meter id:
        error text}`` of the changes the switch refused (empty: all
        applied).
        """
        def run():
            sent, data = {}, b''
            for command, meter, rate, burst in mods:
                bands = b''
                if command != METER_DELETE:
                    bands = BAND_DROP_S.pack(BAND_DROP, BAND_DROP_S.size,
                                             rate, burst)
                xid, msg = self._message(T_METER_MOD, METER_MOD.pack(
                    command, MF_KBPS | MF_BURST | MF_STATS, meter) + bands)
                sent[xid] = meter
                data += msg
            barrier, msg = self._message(T_BARRIER_REQUEST)
            self._sock.sendall(data + msg)
            refused = {}
            while True:
                _, mtype, xid, body = self._read()
                if mtype == T_ERROR and xid in sent:
                    refused[sent[xid]] = _error(body, 'meter %d'
                                                % sent[xid])
                elif mtype == T_BARRIER_REPLY and xid == barrier:
                    return refused
        return self._exchange(run)


class RequestRefused(WireError):
    pass


# OFPET_METER_MOD_FAILED codes (OpenFlow 1.3.5, 7.4.4.10).
METER_ERRORS = {0: 'unknown', 1: 'meter exists', 2: 'invalid meter',
                3: 'unknown meter', 4: 'bad command', 5: 'bad flags',
                6: 'bad rate', 7: 'bad burst', 8: 'bad band',
                9: 'bad band value', 10: 'out of meters',
                11: 'out of bands'}


def _error(body, what):
    etype, code = struct.unpack('!HH', body[:4])
    text = METER_ERRORS.get(code, str(code)) if etype == 12 else str(code)
    return '%s refused: error type %d (%s)' % (what, etype, text)
