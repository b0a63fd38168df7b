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
"""Privileged libpqos calls (L3 CAT classes of service, core association).

libpqos needs root whatever its interface, so it is initialised and called
only in the privileged daemon, once per interface. Each entry point takes
the interface name, L3 cache ids, class ids, masks and core numbers -- all
checked here (ints, ranges, contiguous masks within the cache) -- never a
path or a free-form string, so the daemon can do nothing but set classes
of service and associate cores.
"""

import types

from resq_agent import privsep
from resq_common import cbm

INTERFACES = ('OS', 'MSR')
_wrapper = None     # the pqos wrapper's classes; tests inject a fake
_libraries = {}     # interface -> Library, made once in the daemon


def wrapper():
    """The pqos wrapper's classes (a namespace), imported on first use.

    :raises ImportError: the wrapper is not installed.
    :raises OSError: it cannot load libpqos.so.5.
    """
    global _wrapper
    if _wrapper is None:
        import pqos
        from pqos import allocation
        from pqos import capability
        from pqos import cpuinfo
        from pqos import l3ca
        pqos.Pqos()     # loads libpqos.so.5, raising OSError without it
        _wrapper = types.SimpleNamespace(
            Pqos=pqos.Pqos, PqosCatL3=l3ca.PqosCatL3,
            PqosAlloc=allocation.PqosAlloc, PqosCap=capability.PqosCap,
            PqosCpuInfo=cpuinfo.PqosCpuInfo)
    return _wrapper


def use_wrapper(module):
    """Use ``module`` (a fake, in tests) instead of the pqos wrapper."""
    global _wrapper
    _wrapper = module
    _libraries.clear()


class Library:
    """libpqos initialised on one interface, and what it reports."""

    def __init__(self, interface):
        w = wrapper()
        w.Pqos().init(interface)
        self.l3ca = w.PqosCatL3()
        self.alloc = w.PqosAlloc()
        self.cpuinfo = w.PqosCpuInfo()
        cap = w.PqosCap()
        l3 = cap.get_type('l3ca')
        self.num_classes = int(l3.num_classes)
        self.cbm_mask = (1 << int(l3.num_ways)) - 1
        self.cdp = bool(l3.cdp_on)
        self.min_cbm_bits = max(int(self.l3ca.get_min_cbm_bits()), 1)
        self.cos = w.PqosCatL3.COS


def _library(interface):
    if interface not in INTERFACES:
        raise ValueError('libpqos interface must be one of %s, not %r'
                         % (', '.join(INTERFACES), interface))
    if interface not in _libraries:
        _libraries[interface] = Library(interface)
    return _libraries[interface]


def _nonneg(value, what):
    value = int(value)
    if value < 0:
        raise ValueError('%s must be >= 0, not %d' % (what, value))
    return value


def _class_id(lib, class_id):
    class_id = _nonneg(class_id, 'class of service')
    if class_id >= lib.num_classes:
        raise ValueError('class of service %d does not exist: the platform '
                         'has %d (0-%d)' % (class_id, lib.num_classes,
                                            lib.num_classes - 1))
    return class_id


@privsep.pqos_pctxt.entrypoint
def platform(interface):
    """``{num_classes, cbm_mask, min_cbm_bits, cdp}`` as libpqos sees it."""
    lib = _library(interface)
    return {'num_classes': lib.num_classes, 'cbm_mask': lib.cbm_mask,
            'min_cbm_bits': lib.min_cbm_bits, 'cdp': lib.cdp}


@privsep.pqos_pctxt.entrypoint
def cores_of(interface, l3id):
    """The logical cores sharing L3 cache ``l3id``."""
    lib = _library(interface)
    return sorted(int(c) for c in lib.cpuinfo.get_cores_l3id(
        _nonneg(l3id, 'L3 cache id')))


@privsep.pqos_pctxt.entrypoint
def read_l3_classes(interface, l3id):
    """``{class id: mask}`` of L3 cache ``l3id`` (the code mask with CDP)."""
    lib = _library(interface)
    return {int(c.class_id): int(c.code_mask if c.cdp else c.mask)
            for c in lib.l3ca.get(_nonneg(l3id, 'L3 cache id'))}


@privsep.pqos_pctxt.entrypoint
def set_l3_class(interface, l3id, class_id, mask):
    """Give class ``class_id`` of L3 cache ``l3id`` the ways of ``mask``.

    With CDP on, code and data get the same mask.

    :raises cbm.InvalidMask: the mask is not contiguous, too short or
        outside the cache.
    """
    lib = _library(interface)
    l3id = _nonneg(l3id, 'L3 cache id')
    class_id = _class_id(lib, class_id)
    mask = cbm.validate(int(mask), lib.cbm_mask, lib.min_cbm_bits)
    if lib.cdp:
        cos = lib.cos(class_id, code_mask=mask, data_mask=mask)
    else:
        cos = lib.cos(class_id, mask)
    lib.l3ca.set(l3id, [cos])


@privsep.pqos_pctxt.entrypoint
def read_associations(interface, cores):
    """``{core: class id}`` for each of ``cores``."""
    lib = _library(interface)
    return {c: int(lib.alloc.assoc_get(c))
            for c in sorted({_nonneg(c, 'core') for c in cores})}


@privsep.pqos_pctxt.entrypoint
def associate_cores(interface, cores, class_id):
    """Run ``cores`` (logical core numbers) in class ``class_id``."""
    lib = _library(interface)
    class_id = _class_id(lib, class_id)
    for core in sorted({_nonneg(c, 'core') for c in cores}):
        lib.alloc.assoc_set(core, class_id)
