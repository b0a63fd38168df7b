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
"""What resq-nova created in Nova and Placement, found and removed.

``resq-manage cleanup`` first makes a :class:`Plan`, then carries it out
with :func:`execute`. Only what carries resq-nova's exact names is ever
planned for removal:

* flavors named as SLO admission names them (``resq.<term>.<ways>w``, see
  :func:`resq_nova.deploy.flavors.flavor_name`) that carry ``resq:`` extra
  specs; one still used by a server is kept;
* the cache-domain child providers of the agents: a child of a compute
  node's provider whose UUID and name are those
  :mod:`resq_common.cache_domain` derives from its parent. One holding
  allocations is kept;
* the traits ``CUSTOM_RESQ_*`` and ``CUSTOM_CAT_L3``, once no provider
  left carries them;
* the resource classes ``CUSTOM_LLC_WAY``, ``CUSTOM_LLC_CLOS``,
  ``CUSTOM_RESQ_CORE`` and ``CUSTOM_RESQ_ONDEMAND_CORE``, once no
  provider has an inventory of them (Placement refuses otherwise).

A trait or resource class that a kept flavor's extra specs name (``trait
<suffix>:NAME``, required or forbidden, ``resources<suffix>:CLASS``) is
kept too: nova-scheduler fails on a flavor naming a trait Placement does
not know (a ``TypeError`` in Nova 34), and Placement refuses a request for
an unknown resource class.

Removal goes in that order: flavors (only once the operator said yes),
providers, traits, resource classes. A trait or class that depends on a
provider whose removal failed is not tried; one that a flavor the
operator declined to delete names is kept (outcome ``kept``); every
outcome is reported as it was. Flavors of other names whose extra specs
ask for resq-nova's resources are reported, never changed.
"""

import dataclasses
import re

from resq_common import cache_domain
from resq_common.clients import compute as compute_mod
from resq_common.clients import placement as placement_mod
from resq_common import exception
from resq_common import extra_specs

RESOURCE_CLASSES = (extra_specs.RC_LLC_WAY, extra_specs.RC_LLC_CLOS,
                    extra_specs.RC_RESQ_CORE, extra_specs.RC_ONDEMAND_CORE)
TRAIT_PREFIX = 'CUSTOM_RESQ_'
TRAITS = (extra_specs.TRAIT_CAT_L3,)
# resq.<term>.<ways>w (resq_nova.deploy.flavors.flavor_name).
FLAVOR_RE = re.compile(r'resq\.[^\s]+\.[0-9]+w')
MV_TRAIT_FILTER = '1.18'       # GET /resource_providers?required=
MV_RESOURCE_CLASSES = '1.2'    # custom resource classes

REMOVE = 'remove'
KEEP = 'keep'
REMOVED = 'removed'
FAILED = 'failed'
SKIPPED = 'skipped'
DECLINED = 'declined'
KEPT = 'kept'


@dataclasses.dataclass
class Item:
    """One thing resq-nova created, and what the plan does with it."""

    kind: str            # flavor, provider, trait, resource class
    name: str
    ident: str
    action: str          # REMOVE or KEEP
    reason: str = ''
    needs: tuple = ()    # idents of providers and flavors that must go first
    outcome: str = ''
    error: str = ''
    # A flavor's extra specs (what it asks Placement for).
    specs: dict = dataclasses.field(default_factory=dict, repr=False)

    def line(self):
        what = '%s %s' % (self.kind, self.name)
        if self.ident != self.name:
            what += ' (%s)' % self.ident
        text = '%-7s %s' % (self.action, what)
        return text + (': %s' % self.reason if self.reason else '')


@dataclasses.dataclass
class Plan:
    items: list

    def to_remove(self, kind=None):
        return [i for i in self.items if i.action == REMOVE
                and (kind is None or i.kind == kind)]

    def lines(self):
        if not self.items:
            return ['nothing of resq-nova\'s found']
        lines = [i.line() for i in self.items]
        if not self.to_remove():
            lines.append('nothing of resq-nova\'s left to remove')
        return lines


class Placement(placement_mod.PlacementClient):
    """The Placement calls only clean-up makes."""

    def resq_traits(self):
        """The traits of resq-nova's names that exist in Placement."""
        found = self._call('GET', '/traits?name=startswith:%s'
                           % TRAIT_PREFIX, placement_mod.MV_TRAITS)['traits']
        found += self._call('GET', '/traits?name=in:%s' % ','.join(TRAITS),
                            placement_mod.MV_TRAITS)['traits']
        return sorted(set(found))

    def providers_with_trait(self, trait):
        return [p['uuid'] for p in self._call(
            'GET', '/resource_providers?required=%s' % trait,
            MV_TRAIT_FILTER)['resource_providers']]

    def resource_classes(self):
        return {rc['name'] for rc in self._call(
            'GET', '/resource_classes', MV_RESOURCE_CLASSES)[
                'resource_classes']}

    def delete_trait(self, name):
        self._call('DELETE', '/traits/%s' % name, placement_mod.MV_TRAITS,
                   ok=(204, 404))

    def delete_resource_class(self, name):
        self._call('DELETE', '/resource_classes/%s' % name,
                   MV_RESOURCE_CLASSES, ok=(204, 404))

    def delete_provider_strict(self, uuid):
        self._call('DELETE', '/resource_providers/%s' % uuid,
                   placement_mod.MV_NESTED, ok=(204, 404))


class Compute(compute_mod.ComputeClient):
    """The compute API calls only clean-up makes."""

    def list_flavors(self):
        """Every flavor, public or private, with its extra specs."""
        return self._pages('/flavors/detail?is_public=None', 'flavors',
                           marker_key='id')


def is_resq_flavor(flavor):
    specs = flavor.get('extra_specs') or {}
    return bool(FLAVOR_RE.fullmatch(flavor['name'])
                and any(k.startswith('resq:') for k in specs))


def resq_keys(specs):
    """The extra-spec keys of ``specs`` that belong to resq-nova."""
    keys = []
    for key, value in specs.items():
        if key.startswith('resq:'):
            keys.append(key)
        elif key.startswith('resources') and key.partition(':')[2] in \
                RESOURCE_CLASSES:
            keys.append(key)
        elif key.startswith('trait') and (
                key.partition(':')[2].startswith(TRAIT_PREFIX)
                or key.partition(':')[2] in TRAITS):
            keys.append(key)
    return sorted(keys)


def plan_flavors(compute):
    servers = compute.list_all_servers()
    used = {}
    for server in servers:
        name = (server.get('flavor') or {}).get('original_name')
        used[name] = used.get(name, 0) + 1
    items = []
    for flavor in sorted(compute.list_flavors(), key=lambda f: f['name']):
        if is_resq_flavor(flavor):
            n = used.get(flavor['name'], 0)
            specs = dict(flavor.get('extra_specs') or {})
            if n:
                items.append(Item('flavor', flavor['name'], flavor['id'],
                                  KEEP, '%d server(s) use it; delete or '
                                  'resize them first' % n, specs=specs))
            else:
                items.append(Item('flavor', flavor['name'], flavor['id'],
                                  REMOVE, specs=specs))
            continue
        keys = resq_keys(flavor.get('extra_specs') or {})
        if keys:
            items.append(Item(
                'flavor', flavor['name'], flavor['id'], KEEP,
                'not resq-nova\'s (by its name), but it asks for %s; '
                'remove them with "openstack flavor unset --property KEY"'
                % ', '.join(keys), specs=dict(flavor['extra_specs'])))
    return items


def _naming(flavors, kind, name):
    """The flavors among ``flavors`` whose extra specs name ``name``.

    :param kind: ``trait`` or ``resource class``.
    :returns: ``[(flavor item, [keys])]``.
    """
    found = []
    for flavor in flavors:
        traits, classes = extra_specs.placement_names(flavor.specs)
        keys = (traits if kind == 'trait' else classes).get(name)
        if keys:
            found.append((flavor, keys))
    return found


def _flavor_hold(kind, name, flavors):
    """A trait's or class's reason to stay for kept flavors, or ''."""
    kept = _naming([f for f in flavors if f.action == KEEP], kind, name)
    if not kept:
        return ''
    return ('kept flavor(s) ask for it: %s; Nova cannot schedule a flavor '
            'naming a %s Placement does not know: delete the flavor or '
            'unset the key first' % (', '.join(
                '%s (%s)' % (f.name, ', '.join(keys)) for f, keys in kept),
                kind))


def _flavor_needs(kind, name, flavors):
    """The flavors planned for removal that name it: they go first."""
    return tuple(f.ident for f, _ in _naming(
        [f for f in flavors if f.action == REMOVE], kind, name))


def resq_providers(providers):
    """The agents' cache-domain providers among ``providers``."""
    by_uuid = {p['uuid']: p for p in providers}
    found = []
    for rp in providers:
        parent = by_uuid.get(rp.get('parent_provider_uuid'))
        if parent is None:
            continue
        domain = cache_domain.domain_of(parent['uuid'], rp['uuid'])
        if domain is not None and rp['name'] == cache_domain.provider_name(
                parent['name'], domain):
            found.append(rp)
    return found


def plan_providers(placement):
    providers = placement.list_providers()
    parents = {p.get('parent_provider_uuid') for p in providers}
    items = []
    for rp in sorted(resq_providers(providers), key=lambda p: p['name']):
        allocations = placement.get_provider_allocations(rp['uuid'])
        if allocations:
            items.append(Item(
                'provider', rp['name'], rp['uuid'], KEEP,
                '%d consumer(s) hold allocations on it (%s); delete or '
                'migrate those servers first' % (
                    len(allocations), ', '.join(sorted(allocations)))))
        elif rp['uuid'] in parents:
            items.append(Item('provider', rp['name'], rp['uuid'], KEEP,
                              'it has child providers that are not '
                              'resq-nova\'s'))
        else:
            items.append(Item('provider', rp['name'], rp['uuid'], REMOVE))
    return items


def plan_traits(placement, providers, flavors=()):
    """Traits to remove: on no provider that stays, named by no kept flavor.

    A trait that a flavor planned for removal names waits for it.
    """
    going = {i.ident for i in providers if i.action == REMOVE}
    items = []
    for trait in placement.resq_traits():
        holders = placement.providers_with_trait(trait)
        staying = sorted(set(holders) - going)
        reasons = []
        if staying:
            reasons.append('still on provider(s) %s' % ', '.join(staying))
        held = _flavor_hold('trait', trait, flavors)
        if held:
            reasons.append(held)
        if reasons:
            items.append(Item('trait', trait, trait, KEEP,
                              '; '.join(reasons)))
        else:
            items.append(Item('trait', trait, trait, REMOVE, needs=tuple(
                sorted(holders)) + _flavor_needs('trait', trait, flavors)))
    return items


def plan_classes(placement, providers, flavors=()):
    """Classes to remove: no cache-domain provider nor kept flavor stays.

    A class that a flavor planned for removal asks for waits for it.
    """
    existing = placement.resource_classes()
    kept = sorted(i.ident for i in providers if i.action == KEEP)
    going = tuple(sorted(i.ident for i in providers if i.action == REMOVE))
    items = []
    for rc in RESOURCE_CLASSES:
        if rc not in existing:
            continue
        reasons = []
        if kept:
            reasons.append('kept provider(s) may have an inventory of it: '
                           '%s' % ', '.join(kept))
        held = _flavor_hold('resource class', rc, flavors)
        if held:
            reasons.append(held)
        if reasons:
            items.append(Item('resource class', rc, rc, KEEP,
                              '; '.join(reasons)))
        else:
            items.append(Item('resource class', rc, rc, REMOVE,
                              'unless a provider that is not resq-nova\'s '
                              'has an inventory of it', needs=going
                              + _flavor_needs('resource class', rc,
                                              flavors)))
    return items


def make_plan(placement, compute):
    """Find what resq-nova created, and what may go. Changes nothing."""
    flavors = plan_flavors(compute)
    providers = plan_providers(placement)
    items = flavors + providers
    items += plan_traits(placement, providers, flavors)
    items += plan_classes(placement, providers, flavors)
    return Plan(items)


def _delete(item, placement, compute):
    if item.kind == 'flavor':
        compute.delete_flavor(item.ident)
    elif item.kind == 'provider':
        placement.delete_provider_strict(item.ident)
    elif item.kind == 'trait':
        placement.delete_trait(item.ident)
    else:
        placement.delete_resource_class(item.ident)


def execute(plan, placement, compute, flavors_confirmed):
    """Remove what the plan says, in order; record each outcome.

    :param flavors_confirmed: the operator agreed to delete the flavors;
        otherwise they are kept (outcome ``declined``), and so are the
        traits and classes they name (outcome ``kept``).
    :returns: the items planned for removal, each with its ``outcome``
        (``removed``, ``failed`` with ``error``, ``skipped`` with
        ``error`` naming what it waited for, ``declined``, or ``kept``
        with ``error`` naming the declined flavors that ask for it).
    """
    failed = {}
    declined = {}
    done = []
    for item in plan.to_remove():
        done.append(item)
        if item.kind == 'flavor' and not flavors_confirmed:
            item.outcome = DECLINED
            declined[item.ident] = item.name
            continue
        blocked = sorted(failed[i] for i in item.needs if i in failed)
        if blocked:
            item.outcome = SKIPPED
            item.error = ('not tried: %s could not be removed'
                          % ', '.join(blocked))
            continue
        held = sorted(declined[i] for i in item.needs if i in declined)
        if held:
            item.outcome = KEPT
            item.error = ('flavor(s) %s ask for it and were not deleted'
                          % ', '.join(held))
            continue
        try:
            _delete(item, placement, compute)
        except exception.ResQException as exc:
            item.outcome = FAILED
            item.error = str(exc)
            failed[item.ident] = '%s %s' % (item.kind, item.ident)
            continue
        item.outcome = REMOVED
    return done


def succeeded(done):
    """Nothing failed or was left untried for a failure."""
    return all(i.outcome in (REMOVED, DECLINED, KEPT) for i in done)


def declined(done):
    """What stayed because the flavors were not confirmed."""
    return [i for i in done if i.outcome in (DECLINED, KEPT)]
