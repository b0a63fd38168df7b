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
"""Behind the curtain of one compute host: its resctrl tree and libvirtd.

A fake CAT host (``python -m resq_fake.host up --state DIR``) serves
its resctrl file system at ``DIR/resctrl`` (the kernel-like FUSE mount the
agent writes through; the backing tree is ``DIR/resctrl-backing``) and its
libvirtd at ``qemu:///system?socket=DIR/run/sock/libvirt-sock``. This
module reads them as root on the same machine, parsing what it reads
itself: it does not reuse the agent's parsers it checks.
"""

import os
import xml.etree.ElementTree as ET

GROUP_PREFIX = 'resq-'
# Entries of a resctrl directory that are not groups.
NOT_GROUPS = ('info', 'mon_data', 'mon_groups')
# The files of a group whose content and last write a snapshot records.
GROUP_FILES = ('schemata', 'cpus_list', 'cpus', 'mode')


def parse_cpu_list(text):
    """``'0-2,5'`` -> ``{0, 1, 2, 5}`` (empty text: an empty set)."""
    cpus = set()
    for item in text.replace('\n', ',').split(','):
        item = item.strip()
        if not item:
            continue
        if item.startswith('^'):
            raise ValueError('CPU exclusions are not expected: %r' % text)
        first, _, last = item.partition('-')
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


def parse_schemata(text):
    """``{resource: {domain id: mask}}`` of a resctrl ``schemata`` file."""
    result = {}
    for line in text.splitlines():
        name, sep, values = line.strip().partition(':')
        if not sep:
            continue
        domains = {}
        for item in values.split(';'):
            dom, sep, value = item.strip().partition('=')
            if sep:
                # Cache masks are hexadecimal; bandwidth (MB) is decimal.
                domains[int(dom)] = (int(value, 16) if name.startswith('L')
                                     else int(value))
        result[name.strip()] = domains
    return result


class ComputeHost:
    """One compute host's resctrl tree and libvirtd, read directly."""

    def __init__(self, name, state_dir, metrics_url=None):
        self.name = name
        self.state = os.path.abspath(state_dir)
        self.resctrl = os.path.join(self.state, 'resctrl')
        self.backing = os.path.join(self.state, 'resctrl-backing')
        self.socket = os.path.join(self.state, 'run', 'sock', 'libvirt-sock')
        self.libvirt_uri = 'qemu:///system?socket=%s' % self.socket
        self.metrics_url = metrics_url

    def __repr__(self):
        return 'ComputeHost(%s, %s)' % (self.name, self.state)

    def missing(self):
        """What of this host is absent, as a sentence; None if nothing."""
        if not os.path.isdir(self.state):
            return ('state directory %s of compute host %s does not exist'
                    % (self.state, self.name))
        if not os.path.isdir(os.path.join(self.resctrl, 'info', 'L3')):
            return ('compute host %s serves no resctrl tree at %s (no '
                    'info/L3)' % (self.name, self.resctrl))
        if not os.path.exists(self.socket):
            return ('compute host %s has no libvirtd socket at %s'
                    % (self.name, self.socket))
        return None

    # -- resctrl ----------------------------------------------------------
    def path(self, *parts):
        return os.path.join(self.resctrl, *parts)

    def read(self, *parts):
        with open(self.path(*parts)) as f:
            return f.read()

    def _dirs(self, *parts):
        where = self.path(*parts)
        if not os.path.isdir(where):
            return []
        return sorted(n for n in os.listdir(where)
                      if os.path.isdir(os.path.join(where, n)))

    def groups(self):
        """The ``resq-`` control groups."""
        return [g for g in self._dirs() if g.startswith(GROUP_PREFIX)]

    def mon_groups(self, group):
        return self._dirs(group, 'mon_groups')

    def l3_masks(self, *group):
        """``{domain: mask}`` of a group's L3 schemata (root: no args)."""
        return parse_schemata(self.read(*(group + ('schemata',)))).get(
            'L3', {})

    def cpus(self, *group):
        """The CPUs of a group (root: no args; a monitoring group too)."""
        return parse_cpu_list(self.read(*(group + ('cpus_list',))))

    def group_of(self, server_id):
        """``(control group, monitoring group or None)`` holding a guest.

        A guest is in a class ``resq-cos<k>`` with a monitoring group
        ``resq-<uuid>``, or (an earlier release's layout) in a control
        group ``resq-<uuid>`` of its own. None if neither exists.
        """
        own = GROUP_PREFIX + server_id.lower()
        for group in self.groups():
            if group == own:
                return group, None
            if own in self.mon_groups(group):
                return group, own
        return None

    def snapshot(self):
        """``{file: (content, mtime ns)}`` of every file the agent writes.

        The root group, every ``resq-`` group and their monitoring groups:
        a rewrite with the same content still changes the mtime (the
        kernel-like file system keeps the backing file's).
        """
        files = {}
        places = [()]
        for group in self.groups():
            places.append((group,))
            places.extend((group, 'mon_groups', m)
                          for m in self.mon_groups(group))
        for place in places:
            for name in GROUP_FILES:
                path = self.path(*(place + (name,)))
                if os.path.exists(path):
                    files['/'.join(place + (name,))] = (
                        self.read(*(place + (name,))),
                        os.stat(path).st_mtime_ns)
        return files

    def occupancy(self, group, mon=None):
        """A group's LLC occupancy summed over its domains' counters."""
        place = (group,) + (('mon_groups', mon) if mon else ())
        return sum(int(self.read(*(place + ('mon_data', d, 'llc_occupancy'))))
                   for d in self._dirs(*(place + ('mon_data',))))

    def write_occupancy(self, group, mon, domain, value):
        """Set what the kernel would count as a group's LLC occupancy.

        Counters are read-only through the mount, as on the kernel's
        resctrl; the test plays the hardware and writes the backing tree.
        """
        parts = [self.backing, group]
        if mon:
            parts += ['mon_groups', mon]
        parts += ['mon_data', 'mon_L3_%02d' % domain, 'llc_occupancy']
        path = os.path.join(*parts)
        if not os.path.exists(path):
            raise FileNotFoundError('no occupancy counter at %s' % path)
        with open(path, 'w') as f:
            f.write('%d\n' % value)
        return path

    # -- libvirt ------------------------------------------------------------
    def domain_xml(self, server_id):
        """The guest's libvirt XML as an Element, or None if undefined."""
        import libvirt

        libvirt.registerErrorHandler(lambda ctx, err: None, None)
        conn = libvirt.openReadOnly(self.libvirt_uri)
        try:
            try:
                dom = conn.lookupByUUIDString(server_id)
            except libvirt.libvirtError as exc:
                if exc.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN:
                    return None
                raise
            return ET.fromstring(dom.XMLDesc(0))
        finally:
            conn.close()

    def pinned_cpus(self, server_id):
        """The host CPUs of the guest's ``<cputune><vcpupin>``s."""
        xml = self.domain_xml(server_id)
        cpus = set()
        if xml is not None:
            for pin in xml.findall('./cputune/vcpupin'):
                cpus |= parse_cpu_list(pin.get('cpuset', ''))
        return cpus

    def floating_cpus(self, server_id):
        """The CPUs an unpinned guest floats over (``<vcpu cpuset>``)."""
        xml = self.domain_xml(server_id)
        vcpu = None if xml is None else xml.find('./vcpu')
        if vcpu is None or not vcpu.get('cpuset'):
            return set()
        return parse_cpu_list(vcpu.get('cpuset'))
