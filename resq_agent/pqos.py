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
"""Backend selection: resctrl, or Intel's libpqos when it can be loaded.

The ``pqos`` Python wrapper (PyPI, 5.x) loads ``libpqos.so.5`` when its
``Pqos`` object is made. Debian bookworm ships intel-cmt-cat 4.5
(``libpqos.so.4``), so on such hosts the wrapper cannot work: the agent
says so and enforces through resctrl, which needs no library.

With the library present, libpqos is initialised on its ``OS`` interface,
i.e. on top of the same resctrl file system; the agent still writes the
groups itself (one ``resq-`` group per instance, which libpqos's
class-of-service numbering cannot name), and uses libpqos only as a check
that the platform's CAT works as the library sees it.
"""

from oslo_log import log as logging

from resq_agent import enforcer

LOG = logging.getLogger(__name__)
LIBRARY = 'libpqos.so.5'


def probe():
    """``None`` when libpqos works, else why not (an operator's message)."""
    try:
        import pqos
    except ImportError as exc:
        return ('the pqos Python package is not installed (%s); install it '
                'with "pip install pqos" together with intel-cmt-cat 5.x'
                % exc)
    try:
        lib = pqos.Pqos()
    except OSError as exc:
        return ('the pqos Python package cannot load %s (%s); it needs '
                'intel-cmt-cat 5.x (Debian bookworm ships 4.5 with '
                'libpqos.so.4)' % (LIBRARY, exc))
    try:
        lib.init('OS')
        lib.fini()
    except Exception as exc:
        return 'libpqos failed to initialise on the OS interface: %s' % exc
    return None


def load_backend(conf):
    """The enforcer ``[resq_agent] backend`` asks for, or resctrl."""
    root = conf.resq_agent.resctrl_root
    if conf.resq_agent.backend != 'pqos':
        return enforcer.ResctrlEnforcer(root)
    reason = probe()
    if reason is not None:
        LOG.warning('[resq_agent] backend = pqos, but %s. Falling back to '
                    'the resctrl backend (%s).', reason, root)
        return enforcer.ResctrlEnforcer(root)
    LOG.info('libpqos %s loaded; cache partitions are written through '
             'resctrl (%s), checked by libpqos', LIBRARY, root)
    backend = enforcer.ResctrlEnforcer(root)
    backend.name = 'pqos'
    return backend
