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
"""The optimizer's side of on-demand escalations: scale out, or say why not.

An agent escalates an on-demand NF its host cannot keep within its latency
target (:mod:`resq_agent.ondemand.escalation`). The optimizer asks
Placement for cache domains whose on-demand lease has room for one more
instance of the NF's size (``CUSTOM_RESQ_ONDEMAND_CORE``, one per vCPU),
on any host but the escalating one, and decides

* ``scale_out``: one more instance fits in the lease of that host; with
  ``[resq_optimizer] ondemand_scale_out = boot`` the
  optimizer boots it (:class:`ScaleOut`): a clone of the escalated server
  (its flavor ``resq.<term>.ondemand``, image, networks, key pair and
  security groups), named ``<term>-<n>`` after the term's highest ``n``,
  with metadata ``resq_scaled_from=<escalated server>``, asked of Nova
  for that host (``hypervisor_hostname``, microversion 2.74: the
  scheduler and the ResQ filter still check it). It boots only in its own
  project (its ``[nova]`` credentials', where ``resq-admit --slo
  on-demand`` boots the term); a server of another project is left to its
  tenant or an orchestrator listening to the notification;
* ``unmet``: no lease has room, or the term already has
  ``ondemand_max_instances`` servers; the SLO cannot be met with the cloud
  as it is.

With ``ondemand_scale_out = off`` (the default) the optimizer decides
nothing: it logs the escalation and answers ``off`` (the agent's own
``resq.ondemand.escalation`` notification reports it); with ``notify`` it
decides and announces, and boots nothing.

A boot is logged and announced with who asks and why
(``resq.optimizer.action.start`` and ``.end``,
:mod:`resq_nova.optimizer.actions`). The boot's true outcome
(``outcome``): ``booted`` when the clone is
ACTIVE (its uuid and host), ``failed`` with Nova's reason (the request
refused, the server in ERROR, the timeout), ``in_progress`` or ``reused``
when a clone of the same server is still building or was created within
``ondemand_clone_window`` seconds (repeated escalations boot no second
one), ``not_booted`` with the reason (notify mode, another project, a
server the optimizer cannot clone, no lease).

Both decisions are versioned notifications,
``resq.optimizer.ondemand.scale_out`` (level info; error when the boot
failed) and ``resq.optimizer.ondemand.unmet`` (level error), with
``OnDemandDecisionPayload`` 1.1: the escalation's fields and
``decision``, ``target_host``, ``target_provider``, ``reason``, and since
1.1 ``outcome``, ``server_uuid``, ``server_host`` (additive: readers of
1.0 ignore them). The RPC call returns the same data.
"""

import datetime
import re
import threading
import time

from oslo_log import log as logging
import oslo_messaging

from resq_common.clients import compute as compute_mod
from resq_common.clients import placement as placement_client
from resq_common import exception
from resq_common import extra_specs
from resq_nova.admission import ondemand as od_admission
from resq_nova.optimizer import actions as actions_mod
from resq_nova.optimizer import execute

LOG = logging.getLogger(__name__)

SCALE_OUT = 'resq.optimizer.ondemand.scale_out'
UNMET = 'resq.optimizer.ondemand.unmet'
PAYLOAD_VERSION = '1.1'
GROUP = '_OD'
SCALED_FROM_KEY = 'resq_scaled_from'
TERM_KEY = 'resq:term'
BOOT, NOTIFY, OFF = 'boot', 'notify', 'off'
# Outcomes (payload 1.1).
BOOTED = 'booted'
FAILED = 'failed'
IN_PROGRESS = 'in_progress'
REUSED = 'reused'
NOT_BOOTED = 'not_booted'


class BadEscalation(ValueError):
    """An escalation the optimizer cannot read; the message says why."""


def read(body):
    """The data of an ``OnDemandEscalationPayload``.

    :raises BadEscalation: wrong object, major version or fields.
    """
    if not isinstance(body, dict) or body.get(
            'resq_object.name') != 'OnDemandEscalationPayload':
        raise BadEscalation('not an OnDemandEscalationPayload: %r'
                            % (body,))
    version = str(body.get('resq_object.version', ''))
    if version.split('.')[0] != '1':
        raise BadEscalation('OnDemandEscalationPayload version %s; this '
                            'optimizer reads 1.x' % version)
    data = body.get('resq_object.data') or {}
    for key in ('instance_uuid', 'host'):
        if not isinstance(data.get(key), str) or not data[key]:
            raise BadEscalation('escalation without %s: %r' % (key, data))
    vcpus = data.get('vcpus') or 1
    if not isinstance(vcpus, int) or vcpus < 1:
        raise BadEscalation('escalation of %s has vcpus %r'
                            % (data['instance_uuid'], vcpus))
    return dict(data, vcpus=vcpus)


def decide(data, candidates, exclude_roots):
    """Where one more instance fits; pure.

    :param candidates: Placement's ``GET /allocation_candidates`` body for
        ``resources_OD=CUSTOM_RESQ_ONDEMAND_CORE:<vcpus>``.
    :param exclude_roots: compute node provider UUIDs not to use (the
        escalating host: its lease is what failed).
    :returns: ``(decision, domain provider uuid or None, root uuid or
        None, reason)``; the candidate whose lease has the most free cores
        wins, so scale-outs spread over leases.
    """
    summaries = candidates.get('provider_summaries') or {}
    best = None
    for req in candidates.get('allocation_requests') or ():
        for rp in (req.get('mappings') or {}).get(GROUP, ()):
            summary = summaries.get(rp) or {}
            root = summary.get('root_provider_uuid')
            if root in exclude_roots:
                continue
            res = (summary.get('resources') or {}).get(
                extra_specs.RC_ONDEMAND_CORE) or {}
            free = res.get('capacity', 0) - res.get('used', 0)
            key = (free, rp)
            if best is None or key > best[0]:
                best = (key, rp, root)
    if best is None:
        return ('unmet', None, None,
                'no other host has room in its on-demand lease for %d '
                'core(s) of instance %s' % (
                    data['vcpus'], data['instance_uuid']))
    return ('scale_out', best[1], best[2],
            'one more instance fits in the lease of cache domain provider '
            '%s (%d free lease cores)' % (best[1], best[0][0]))


class CannotClone(ValueError):
    """A server the optimizer does not clone; the message says why."""


def term_of(server):
    """The on-demand term of a server, from its flavor.

    :param server: a server document of microversion 2.47 or later (the
        flavor embedded with its name and extra specs).
    :raises CannotClone: not a server of an on-demand flavor.
    """
    flavor = server.get('flavor') or {}
    specs = flavor.get('extra_specs') or {}
    name = flavor.get('original_name') or ''
    if specs.get('resq:slo') != extra_specs.ON_DEMAND:
        raise CannotClone('server %s has flavor %r, not an on-demand one '
                          '(resq:slo=on-demand); only servers of an '
                          'on-demand term are scaled out'
                          % (server.get('id'), name))
    term = specs.get(TERM_KEY)
    if not term:
        match = re.match(r'^resq\.(.+)\.ondemand$', name)
        term = match.group(1) if match else None
    if not term:
        raise CannotClone('server %s has flavor %r without %s and not '
                          'named resq.<term>.ondemand; admit the term with '
                          'resq-admit --slo on-demand'
                          % (server.get('id'), name, TERM_KEY))
    return term, name


def name_pattern(term):
    """Nova's ``name`` filter for the term's servers (a regex)."""
    return '^%s-[0-9]+$' % re.escape(term)


def term_servers(term, servers):
    """``{n: server}`` of the servers named ``<term>-<n>``."""
    found = {}
    for server in servers:
        match = re.match(r'^%s-([0-9]+)$' % re.escape(term),
                         server.get('name') or '')
        if match:
            found[int(match.group(1))] = server
    return found


def next_name(term, numbered):
    """The next server name of a term: ``<term>-<n>``.

    ``n`` is one above the highest in use (resq-admit boots ``<term>-1``);
    a deleted server's number is not taken again.
    """
    return '%s-%d' % (term, max(numbered, default=0) + 1)


def _created(server):
    text = (server.get('created') or '').replace('Z', '+00:00')
    try:
        when = datetime.datetime.fromisoformat(text)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return when.timestamp()


def existing_clone(origin, servers, now, window):
    """A clone of ``origin`` that answers a repeated escalation; pure.

    :returns: ``(IN_PROGRESS or REUSED, server)``, or ``None`` when a new
        clone may be booted: a clone in ERROR, or ACTIVE (or otherwise
        settled) for longer than ``window`` seconds, does not count.
    """
    best = None
    for server in servers:
        if (server.get('metadata') or {}).get(SCALED_FROM_KEY) != origin:
            continue
        status = server.get('status')
        if status == 'BUILD':
            return IN_PROGRESS, server
        if status == 'ERROR':
            continue
        created = _created(server)
        if created is not None and now - created <= window:
            if best is None or created > _created(best[1]):
                best = (REUSED, server)
    return best


def clone_request(server, interfaces):
    """What Nova needs to boot a clone of ``server``; pure.

    :param interfaces: its ports (``os-interface``), in order.
    :returns: ``{'image', 'network', 'key_name', 'security_groups'}`` for
        :meth:`resq_common.clients.compute.ComputeClient.create_server`.
    :raises CannotClone: booted from a volume (its image is ``""``).
    """
    image = server.get('image')
    image_id = image.get('id') if isinstance(image, dict) else None
    if not image_id:
        raise CannotClone('server %s was booted from a volume; the '
                          'optimizer clones only servers booted from an '
                          'image (boot the next instance from a new volume '
                          'yourself)' % server.get('id'))
    nets = [port['net_id'] for port in interfaces if port.get('net_id')]
    groups = sorted({g['name'] for g in server.get('security_groups') or ()
                     if g.get('name')})
    return {'image': image_id, 'network': nets or 'none',
            'key_name': server.get('key_name') or None,
            # Security groups belong to ports: none without a network.
            'security_groups': groups if nets else None}


class ScaleOut:
    """Boots one more instance of an escalated on-demand server.

    See the module doc. :meth:`run` returns ``(outcome, reason,
    server_uuid, server_host)`` and never raises for what Nova says.
    """

    def __init__(self, compute, max_instances=8, boot_timeout=300.0,
                 window=600, wall=time.time, actions=None):
        self.compute = compute
        self.max_instances = max_instances
        self.boot_timeout = boot_timeout
        self.window = window
        self.wall = wall
        self.actions = actions or actions_mod.ActionLog(compute=compute)
        # A repeated escalation must see the first one's clone: the look
        # for a clone and the create are one step.
        self._lock = threading.Lock()

    def run(self, origin, target_host, why=None):
        """Clone server ``origin`` onto ``target_host``.

        :param why: the escalation's reason, for the action's log line and
            notification.
        """
        try:
            with self._lock:
                ready = self._request(origin, target_host, why)
        except (CannotClone, compute_mod.ComputeError) as exc:
            return NOT_BOOTED, str(exc), None, None
        if ready[0] != BOOT:
            return ready
        _, name, server_id, notes, action = ready
        outcome, reason, uuid, host = self._watch(name, server_id,
                                                  target_host)
        self.actions.end(action, outcome, reason, host, server_uuid=uuid)
        return outcome, '; '.join([reason] + notes), uuid, host

    def _request(self, origin, target_host, why=None):
        """Check and ask Nova.

        :returns: ``(BOOT, name, id, notes, action record)`` or an
            outcome.
        """
        server = self.compute.get_server(
            origin, microversion=compute_mod.OPTIMIZER_MICROVERSION)
        own = self.compute.project_id()
        project = server.get('tenant_id')
        if project != own:
            return (NOT_BOOTED, 'server %s is in project %s; the optimizer '
                    'boots only in its own project %s; the tenant or an '
                    'orchestrator listening to %s must boot it on %s'
                    % (origin, project, own, SCALE_OUT, target_host),
                    None, None)
        term, flavor_name = term_of(server)
        numbered = term_servers(term, self.compute.list_servers_detail(
            name_pattern(term)))
        found = existing_clone(origin, numbered.values(), self.wall(),
                               self.window)
        if found is not None:
            outcome, clone = found
            return (outcome, 'clone %s (%s) of server %s is %s, created %s; '
                    'not booting another' % (
                        clone.get('name'), clone['id'], origin,
                        clone.get('status'), clone.get('created')),
                    clone['id'], clone.get('OS-EXT-SRV-ATTR:host'))
        if len(numbered) >= self.max_instances:
            return ('unmet', 'term %s has %d servers (%s), [resq_optimizer] '
                    'ondemand_max_instances is %d: no more are booted; '
                    'raise it or delete servers of the term' % (
                        term, len(numbered), ', '.join(
                            numbered[n]['name'] for n in sorted(numbered)),
                        self.max_instances), None, None)
        flavor = self.compute.find_flavor(flavor_name)
        if flavor is None:
            raise CannotClone('flavor %s of server %s is gone; admit the '
                              'term again' % (flavor_name, origin))
        args = clone_request(server, self.compute.list_interfaces(origin))
        notes = []
        if args['key_name'] and not self.compute.has_keypair(
                args['key_name']):
            # Key pairs belong to users: another user's is not usable.
            notes.append('key pair %s is not the optimizer user\'s: the '
                         'clone has none' % args['key_name'])
            args['key_name'] = None
        name = next_name(term, numbered)
        action = self.actions.start(
            actions_mod.SCALE_OUT_BOOT, None, target_host,
            'scale-out of term %s: server %s escalated%s' % (
                term, origin, ' (%s)' % why if why else ''),
            target_host=target_host, server_name=name)
        try:
            server_id = self.compute.create_server(
                name, flavor['id'], args['image'], args['network'],
                host=target_host, metadata={SCALED_FROM_KEY: origin},
                key_name=args['key_name'],
                security_groups=args['security_groups'])
        except compute_mod.ComputeError as exc:
            reason = 'Nova refused to boot %s on %s: %s' % (
                name, target_host, exc)
            self.actions.end(action, FAILED, reason)
            return (FAILED, reason, None, None)
        LOG.info('Booting %s (%s), a clone of %s, on %s', name, server_id,
                 origin, target_host)
        return BOOT, name, server_id, notes, action

    def _watch(self, name, server_id, target_host):
        try:
            server = self.compute.wait_for_server(server_id,
                                                  self.boot_timeout)
        except compute_mod.ComputeError as exc:
            return (FAILED, 'cannot watch %s (%s): %s; it may still become '
                    'ACTIVE' % (name, server_id, exc), server_id, None)
        host = server.get('OS-EXT-SRV-ATTR:host')
        if server.get('status') == 'ACTIVE':
            return (BOOTED, '%s (%s) is ACTIVE on %s' % (
                name, server_id, host), server_id, host)
        if server.get('status') == 'ERROR':
            why = ['is in ERROR']
            fault = (server.get('fault') or {}).get('message')
            if fault:
                why.append(fault)
            why.extend(self._create_errors(server_id))
        else:
            why = ['is still %s after %ss' % (server.get('status'),
                                              self.boot_timeout)]
        return (FAILED, '%s (%s), asked for on %s, %s' % (
            name, server_id, target_host, '; '.join(why)), server_id, host)

    def _create_errors(self, server_id):
        """The errors of the server's ``create`` action (Nova's events)."""
        try:
            actions = self.compute.instance_actions(server_id)
        except compute_mod.ComputeError:
            return []
        for act in actions:
            if act.get('action') == 'create':
                return execute.nova_errors(self.compute, server_id,
                                           act.get('request_id'))
        return []


class EscalationEndpoint:
    """RPC endpoint of the optimizer (version history: OptimizerAPI)."""

    target = oslo_messaging.Target(version='1.0')

    def __init__(self, placement, notifier=None, compute=None, mode=OFF,
                 max_instances=8, boot_timeout=300.0, window=600,
                 actions=None):
        """The endpoint; see the module doc.

        :param mode: ``off`` (log only), ``notify`` or ``boot``.
        :param compute: Nova's compute API; without it (or with ``mode``
            ``notify``) the optimizer only announces its decision.
        :param actions: the :class:`resq_nova.optimizer.actions.ActionLog`
            a boot is logged and announced with.
        """
        self.placement = placement
        self.notifier = notifier
        self.mode = mode
        self.scale_out = None
        if compute is not None and mode == BOOT:
            self.scale_out = ScaleOut(
                compute, max_instances, boot_timeout, window,
                actions=actions or actions_mod.ActionLog(notifier, compute))

    @classmethod
    def from_conf(cls, conf, placement, notifier=None, compute=None):
        opts = conf.resq_optimizer
        return cls(placement, notifier, compute,
                   mode=opts.ondemand_scale_out,
                   max_instances=opts.ondemand_max_instances,
                   boot_timeout=opts.ondemand_boot_timeout,
                   window=opts.ondemand_clone_window,
                   actions=actions_mod.ActionLog(notifier, compute, conf))

    def escalate(self, ctxt, escalation):
        try:
            data = read(escalation)
        except BadEscalation as exc:
            LOG.error('Ignoring an escalation: %s', exc)
            return {'decision': 'refused', 'reason': str(exc)}
        if self.mode == OFF:
            reason = ('[resq_optimizer] ondemand_scale_out is off: nothing '
                      'is done (set it to notify or boot)')
            LOG.warning('On-demand NF %s on %s escalated (%s); %s',
                        data['instance_uuid'], data['host'],
                        data.get('reason'), reason)
            return dict(data, decision=OFF, reason=reason,
                        outcome=NOT_BOOTED, target_host=None,
                        target_provider=None, server_uuid=None,
                        server_host=None)
        try:
            exclude = set()
            try:
                exclude.add(self.placement.find_provider(
                    data['host'])['uuid'])
            except placement_client.ProviderNotFound:
                pass
            body = od_admission.lease_candidates(self.placement,
                                                 data['vcpus'])
            decision, rp, root, reason = decide(data, body, exclude)
            target_host = (self.placement.get_provider(root)['name']
                           if root else None)
        except placement_client.PlacementError as exc:
            LOG.error('Cannot decide on the escalation of %s: %s',
                      data['instance_uuid'], exc)
            return {'decision': 'error', 'reason': str(exc)}
        result = dict(data, decision=decision, target_host=target_host,
                      target_provider=rp, reason=reason,
                      outcome=NOT_BOOTED, server_uuid=None, server_host=None)
        if decision == 'scale_out':
            self._scale_out(result, 'on %s: %s' % (
                data['host'], data.get('reason') or 'no reason given'))
        if result['decision'] == 'unmet':
            LOG.warning('On-demand SLO of %s on %s cannot be met: %s',
                        data['instance_uuid'], data['host'],
                        result['reason'])
        else:
            log = LOG.error if result['outcome'] == FAILED else LOG.info
            log('On-demand NF %s on %s: scale-out on %s: %s (%s)',
                data['instance_uuid'], data['host'], target_host,
                result['outcome'], result['reason'])
        self._notify(result)
        return result

    def _scale_out(self, result, why):
        if self.scale_out is None:
            cause = ('[resq_optimizer] ondemand_scale_out is notify'
                     if self.mode != BOOT else
                     'the optimizer has no compute client')
            result['reason'] += ('; not booted (%s): the tenant or an '
                                 'orchestrator listening to %s boots it'
                                 % (cause, SCALE_OUT))
            return
        try:
            outcome, reason, uuid, host = self.scale_out.run(
                result['instance_uuid'], result['target_host'],
                why=why)
        except exception.ResQException as exc:
            outcome, reason, uuid, host = FAILED, str(exc), None, None
        except Exception as exc:    # a bug must not hide the outcome
            LOG.exception('Scale-out of %s failed unexpectedly',
                          result['instance_uuid'])
            outcome, reason, uuid, host = (
                FAILED, 'unexpected error: %s' % exc, None, None)
        if outcome == 'unmet':
            result.update(decision='unmet', target_host=None,
                          target_provider=None, outcome=NOT_BOOTED,
                          reason=reason)
            return
        result.update(outcome=outcome, server_uuid=uuid, server_host=host,
                      reason='%s; %s' % (result['reason'], reason))

    def _notify(self, result):
        if self.notifier is None:
            return
        body = {'resq_object.name': 'OnDemandDecisionPayload',
                'resq_object.namespace': 'resq',
                'resq_object.version': PAYLOAD_VERSION,
                'resq_object.data': result}
        try:
            if result['decision'] == 'unmet':
                self.notifier.notifier.error({}, UNMET, body)
            elif result['outcome'] == FAILED:
                self.notifier.notifier.error({}, SCALE_OUT, body)
            else:
                self.notifier.notifier.info({}, SCALE_OUT, body)
        except Exception as exc:
            LOG.warning('Could not send the decision on %s: %s',
                        result['instance_uuid'], exc)


def get_server(conf, transport, endpoint):
    """The optimizer's RPC server on ``[resq_optimizer] rpc_topic``."""
    target = oslo_messaging.Target(topic=conf.resq_optimizer.rpc_topic,
                                   server='resq-optimizer')
    return oslo_messaging.get_rpc_server(
        transport, target, [endpoint], executor='threading',
        access_policy=oslo_messaging.DefaultRPCAccessPolicy)
