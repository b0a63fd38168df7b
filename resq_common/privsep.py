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
"""A privsep context that reads the program's own ``ConfigOpts``.

oslo.privsep's contexts read the global ``cfg.CONF`` and hand the privsep
daemon ``cfg.CONF``'s configuration files. resq-nova's programs parse a
private ``ConfigOpts``, so without this the ``[resq_privsep_*]`` options were
never seen and the daemon started without the program's configuration:
:meth:`PrivContext.use_conf` points the context at that ``ConfigOpts``, and
the daemon is always started with its ``--config-file``/``--config-dir``
arguments, which is where the privileged side reads its own settings (the
resctrl root) from. In the daemon itself the context reads ``cfg.CONF``,
which ``privsep-helper`` parses from those arguments.
"""

import copy
import shlex

from oslo_config import cfg
from oslo_privsep import priv_context


def _opts():
    opts = copy.deepcopy(priv_context.OPTS)
    for opt in opts:
        if opt.name == 'helper_command':
            opt.help += (' resq-nova always appends the program\'s '
                         '--config-file and --config-dir arguments: the '
                         'daemon reads what it may write from them.')
    return opts


def list_opts(*sections):
    """oslo.privsep's options under each of ``sections``, for the samples."""
    return [(section, _opts()) for section in sections]


class PrivContext(priv_context.PrivContext):
    """:class:`oslo_privsep.priv_context.PrivContext` on a given conf."""

    def __init__(self, prefix, cfg_section, pypath, capabilities,
                 logger_name='oslo_privsep.daemon', timeout=None):
        super().__init__(prefix, cfg_section=cfg_section, pypath=pypath,
                         capabilities=capabilities, logger_name=logger_name,
                         timeout=timeout)
        self._defaults = {'capabilities': list(capabilities),
                          'logger_name': logger_name}
        self.config = cfg.CONF

    def use_conf(self, conf):
        """Read this context's options and config files from ``conf``.

        Call it once the program parsed ``conf`` and before the first
        privileged call; returns the previous ``ConfigOpts``.
        """
        if self.cfg_section not in conf:
            conf.register_opts(_opts(), group=self.cfg_section)
            for name, value in self._defaults.items():
                conf.set_default(name, value, group=self.cfg_section)
        previous, self.config = self.config, conf
        return previous

    @property
    def conf(self):
        return self.config[self.cfg_section]

    def helper_command(self, sockpath):
        """The daemon's command line: always with the config files.

        oslo.privsep drops them when ``helper_command`` is set; the
        privileged side needs them to decide what it may touch.
        """
        if self.conf.helper_command:
            cmd = shlex.split(self.conf.helper_command)
        else:
            cmd = list(priv_context._HELPER_COMMAND_PREFIX) + [
                'privsep-helper']
        for opt, arg in (('config_file', '--config-file'),
                         ('config_dir', '--config-dir')):
            try:
                paths = self.config[opt] or ()
            except cfg.NoSuchOptError:
                paths = ()
            for path in paths:
                cmd.extend([arg, path])
        cmd.extend(['--privsep_context', self.pypath,
                    '--privsep_sock_path', sockpath])
        return cmd
