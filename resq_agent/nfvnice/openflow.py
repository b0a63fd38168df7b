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
"""NFVnice's fast path: OpenFlow counters and per-chain meters.

ovs-vswitchd copies interface counters into the database only every
``stats-update-interval`` (5 s by default); over OpenFlow it answers from
the ports themselves. So with ``[resq_agent] nfvnice_bridge`` set the agent
reads, every pass:

* **port statistics** (``ovs-ofctl dump-ports``): the NFs' vhost-user
  ports' ``tx`` (packets delivered into the guest) and ``tx drop`` (lost
  because its ring was full), as fresh as the call;
* **meter statistics** (``ovs-ofctl meter-stats``): each chain's own
  meter counts the packets and bytes of that chain entering the switch
  (``packet_in_count``, ``byte_in_count``) and what the meter dropped.

Each chain of the chains file that has a ``match`` gets one flow in table
0 of the bridge, above the operator's pipeline::

    priority=P, cookie=COOKIE|M, in_port=ENTRY, MATCH, regR=0/0x1
        actions=meter:M, load:1->NXM_NX_REGR[0], resubmit(,0)

The meter counts (and, while the chain is backpressured, rate-limits) the
chain's packets; the flow then sets bit 0 of register R (``[resq_agent]
nfvnice_mark_register``) and sends them through table 0
again, where the mark keeps this flow from matching twice, so the
operator's own flows forward them as before. Only that chain's packets
meet the meter: other chains entering through the same port are never
throttled (the entry-port policer of chains without ``match`` cannot do
that). Without backpressure the meter's rate is the chain's ``max_kbps``
or unlimited.

The agent owns the flows whose cookie has :data:`COOKIE` in its top 16
bits and the meters of its configured range; it never touches anything
else, and removes what it owns (``resq-agent cleanup``, or a chain that
left the file).
"""

import dataclasses
import re

COOKIE = 0x5E5A << 48
COOKIE_MASK = 0xFFFF << 48
UNLIMITED_KBPS = 0xFFFFFFFF          # a meter band's largest rate
MIN_BURST_KB = 72

# Match fields a chain may use (OVS's names); anything else is refused,
# so a chains file cannot smuggle actions or a different table into the
# agent's flows.
MATCH_FIELDS = frozenset((
    'dl_src', 'dl_dst', 'dl_type', 'dl_vlan', 'dl_vlan_pcp', 'vlan_tci',
    'nw_src', 'nw_dst', 'nw_proto', 'nw_tos', 'ip_dscp', 'tp_src',
    'tp_dst', 'ipv6_src', 'ipv6_dst', 'ipv6_label', 'tun_id', 'tunnel_id',
    'mpls_label', 'eth_src', 'eth_dst', 'eth_type', 'vlan_vid', 'ip_src',
    'ip_dst', 'ip_proto', 'udp_src', 'udp_dst', 'tcp_src', 'tcp_dst',
    'sctp_src', 'sctp_dst', 'metadata'))
MATCH_SHORTHANDS = frozenset(('ip', 'ipv6', 'tcp', 'tcp6', 'udp', 'udp6',
                              'sctp', 'sctp6', 'icmp', 'icmp6', 'arp'))
_VALUE_RE = re.compile(r'[A-Za-z0-9:./_-]{1,64}')
PORT_RE = re.compile(r'[A-Za-z0-9_.-]{1,15}')
TARGET_RE = re.compile(r'(?:[A-Za-z0-9_.-]{1,15}|unix:/[A-Za-z0-9_./-]{1,200}'
                       r'|tcp:[0-9.]{7,15}:[0-9]{1,5})')


class InvalidMatch(ValueError):
    pass


def check_match(match):
    """The canonical match string, or :class:`InvalidMatch` naming why.

    ``match`` is OVS's ``field=value`` list separated by commas (e.g.
    ``ip,nw_dst=10.1.0.0/16`` or ``dl_vlan=101``), without ``in_port``,
    ``priority``, ``cookie``, ``table`` or actions: the agent adds those.
    """
    if not isinstance(match, str) or not match.strip():
        raise InvalidMatch('must be a non-empty OpenFlow match such as '
                           '"dl_vlan=101" or "ip,nw_dst=10.1.0.0/16"')
    parts = []
    for item in match.replace(' ', '').split(','):
        if not item:
            raise InvalidMatch('has an empty field (two commas in a row?)')
        if '=' not in item:
            if item not in MATCH_SHORTHANDS:
                raise InvalidMatch('%r is not a protocol shorthand (one of '
                                   '%s)' % (item, ', '.join(
                                       sorted(MATCH_SHORTHANDS))))
            parts.append(item)
            continue
        field, value = item.split('=', 1)
        if field not in MATCH_FIELDS:
            raise InvalidMatch('field %r is not allowed: use packet fields '
                               'only (%s); in_port, priority, cookie, '
                               'table and actions are the agent\'s'
                               % (field, ', '.join(sorted(MATCH_FIELDS))))
        if not _VALUE_RE.fullmatch(value):
            raise InvalidMatch('value %r of %s is not a plain address, '
                               'number or mask' % (value, field))
        parts.append('%s=%s' % (field, value))
    return ','.join(parts)


def check_port(name):
    if not isinstance(name, str) or not PORT_RE.fullmatch(name):
        raise InvalidMatch('entry port %r is not an Open vSwitch port name '
                           '(letters, digits, "_.-", at most 15)' % (name,))
    return name


def flow_spec(meter_id, port, match, priority, register):
    """The agent's flow for one chain (``add-flow`` syntax)."""
    return ('table=0,priority=%d,cookie=%#x,in_port="%s",%s,reg%d=0/0x1,'
            'actions=meter:%d,load:1->NXM_NX_REG%d[0],resubmit(,0)'
            % (priority, COOKIE | meter_id, check_port(port),
               check_match(match), register, meter_id, register))


def meter_band(rate_kbps, burst_kb):
    """``(rate, burst)`` of a meter's drop band, within OpenFlow's range."""
    rate = int(min(UNLIMITED_KBPS, max(1, rate_kbps)))
    burst = int(min(UNLIMITED_KBPS, max(MIN_BURST_KB, burst_kb)))
    return rate, burst


# -- parsing ovs-ofctl's replies ---------------------------------------------
_PORT_RE = re.compile(r'^\s*port\s+"?([^":]+?)"?:\s*rx pkts=(\S+), '
                      r'bytes=(\S+), drop=(\S+),')
_TX_RE = re.compile(r'^\s*tx pkts=(\S+), bytes=(\S+), drop=(\S+),')
_METER_RE = re.compile(r'^meter:(\d+) flow_count:\d+ packet_in_count:(\d+) '
                       r'byte_in_count:(\d+)')
_BAND_RE = re.compile(r'^\s*\d+: packet_count:(\d+) byte_count:(\d+)')


def _num(text):
    return int(text) if text.isdigit() else None


def parse_ports(text):
    """``{port name: {counter: int or None}}`` from ``dump-ports --names``.

    Counters are named as in ``Interface.statistics`` (``rx_packets``,
    ``rx_bytes``, ``rx_dropped``, ``tx_packets``, ``tx_bytes``,
    ``tx_dropped``); a counter the port does not keep ("?") is None.
    """
    ports, current = {}, None
    for line in text.splitlines():
        m = _PORT_RE.match(line)
        if m:
            current = m.group(1).strip()
            ports[current] = {'rx_packets': _num(m.group(2)),
                              'rx_bytes': _num(m.group(3)),
                              'rx_dropped': _num(m.group(4))}
            continue
        m = _TX_RE.match(line)
        if m and current is not None:
            ports[current].update(tx_packets=_num(m.group(1)),
                                  tx_bytes=_num(m.group(2)),
                                  tx_dropped=_num(m.group(3)))
    return ports


@dataclasses.dataclass(frozen=True)
class MeterCounters:
    packets: int
    bytes: int
    dropped: int


def parse_meters(text):
    """``{meter id: MeterCounters}`` from ``meter-stats``."""
    meters, current = {}, None
    for line in text.splitlines():
        m = _METER_RE.match(line)
        if m:
            current = int(m.group(1))
            meters[current] = MeterCounters(int(m.group(2)),
                                            int(m.group(3)), 0)
            continue
        m = _BAND_RE.match(line)
        if m and current is not None:
            c = meters[current]
            meters[current] = dataclasses.replace(
                c, dropped=c.dropped + int(m.group(1)))
    return meters


_FLOW_COOKIE_RE = re.compile(r'cookie=(0x[0-9a-f]+)')


def parse_flow_meters(text):
    """Meter ids of the agent's flows in a ``dump-flows`` reply."""
    ids = set()
    for line in text.splitlines():
        m = _FLOW_COOKIE_RE.search(line)
        if m:
            cookie = int(m.group(1), 16)
            if cookie & COOKIE_MASK == COOKIE:
                ids.add(cookie & ~COOKIE_MASK)
    return ids
