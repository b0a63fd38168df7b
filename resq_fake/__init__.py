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
"""The fake CAT kernel: stand-ins for hardware a machine does not have.

Nothing of resq-nova's working code imports this package; it serves tests,
try-outs, devstack on machines without Intel RDT, and the all-in-one cloud:

* :mod:`resq_fake.resctrl`: what the kernel shows under /sys/fs/resctrl
  and the CPU cache sysfs of a CAT host, in a plain directory, and the
  kernel's rules for writes to it (:class:`resq_fake.resctrl.Kernel`);
* :mod:`resq_fake.resctrl_fuse`: that tree served through FUSE, so that
  writes are checked as the kernel checks them, as a mounted file system;
* :mod:`resq_fake.host`: a compute host that looks like a CAT host, a real
  libvirtd with real guests in private mount and UTS namespaces where
  /sys/fs/resctrl is the FUSE tree.
"""
