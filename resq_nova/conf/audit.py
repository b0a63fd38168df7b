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
"""Options an operator's files set that this release renamed or removed.

``resq-status upgrade check`` reads the configuration files as text (not
through the command's ``ConfigOpts``, which would take a renamed option
silently) and compares what they set with every option resq-nova
registers (its ``oslo.config.opts`` namespaces, :data:`NAMESPACES`):

* an option set under a name the release has renamed (``deprecated_opts``
  or ``deprecated_name``/``deprecated_group`` of the new option): it
  still works for now; rename it;
* an option marked ``deprecated_for_removal``, or one that
  :data:`REMOVED` lists: it does nothing (or soon will); delete it;
* any other name in a group resq-nova owns entirely (:func:`owned`) that
  no option of the release has: removed in an earlier release, or
  misspelled.

Groups with keystoneauth's options (``[placement]``, ``[nova]``,
``[resq_api]``) take the options of whichever ``auth_type`` is set, which
no list holds: only renamed options are looked for there. ``[DEFAULT]``
is shared with oslo.log and others and is not checked for unknown names.
"""

import glob
import importlib.metadata
import os

from oslo_config import cfg

# The oslo.config.opts entry points of resq-nova (setup.cfg).
NAMESPACES = ('resq_nova', 'resq_profiler', 'resq_agent', 'resq_agent.privsep',
              'resq.clients', 'resq.api')
# Options removed from resq-nova: (group, name) -> what replaced them and
# the release that removed them. None yet: 1.0.0 is the first release.
REMOVED = {}
# keystoneauth's plugin option: a group with it takes plugin options.
AUTH_TYPE = 'auth_type'


class Finding:
    """One option set in a file that the release no longer knows as is."""

    RENAMED = 'renamed'
    REMOVED = 'removed'
    UNKNOWN = 'unknown'

    def __init__(self, kind, group, name, path, advice):
        self.kind = kind
        self.group = group
        self.name = name
        self.path = path
        self.advice = advice

    def __str__(self):
        return '[%s] %s in %s: %s' % (self.group, self.name, self.path,
                                      self.advice)

    def __repr__(self):
        return 'Finding(%r, %r, %r)' % (self.kind, self.group, self.name)


def registered(namespaces=NAMESPACES):
    """``[(group, opt)]`` of every option resq-nova registers."""
    found = []
    for ep in importlib.metadata.entry_points(group='oslo.config.opts'):
        if ep.name not in namespaces:
            continue
        for group, opts in ep.load()():
            name = getattr(group, 'name', group) or 'DEFAULT'
            found.extend((name, opt) for opt in opts)
    return found


def owned(options):
    """The groups every option of which is resq-nova's (see the module)."""
    groups = {}
    for group, opt in options:
        groups.setdefault(group, set()).add(_norm(opt.dest))
    return {g for g, names in groups.items()
            if g != 'DEFAULT' and AUTH_TYPE not in names}


def _norm(name):
    return name.replace('-', '_')


def files_read(conf):
    """The files ``conf`` read: ``--config-file``'s, then the directory's."""
    paths = list(conf.config_file or ())
    for directory in conf.config_dir and [conf.config_dir] or ():
        paths.extend(sorted(glob.glob(os.path.join(directory, '*.conf'))))
    return paths


def parse(path):
    """``{group: {name: [values]}}`` of one configuration file."""
    sections = {}
    cfg.ConfigParser(path, sections).parse()
    return sections


def _old_names(group, opt):
    """``{(old group, old name)}`` the option is still read under."""
    old = set()
    for dep in opt.deprecated_opts or ():
        old.add((dep.group or group, _norm(dep.name or opt.dest)))
    old.discard((group, _norm(opt.dest)))
    return old


def audit(sections_by_file, options, removed=None):
    """What the files set that the release renamed or removed. Pure.

    :param sections_by_file: ``[(path, {group: {name: values}})]``.
    :param options: ``[(group, opt)]`` (:func:`registered`).
    :param removed: ``{(group, name): advice}`` (default :data:`REMOVED`).
    :returns: :class:`Finding` objects, by file and then as set.
    """
    removed = REMOVED if removed is None else removed
    current = {}
    renamed = {}
    for group, opt in options:
        current[(group, _norm(opt.dest))] = opt
        for old in _old_names(group, opt):
            renamed[old] = (group, opt)
    groups = owned(options)
    findings = []
    for path, sections in sections_by_file:
        for group, values in sections.items():
            for name in values:
                key = (group, _norm(name))
                finding = _finding(key, path, current, renamed, removed,
                                   groups)
                if finding is not None:
                    findings.append(finding)
    return findings


def _finding(key, path, current, renamed, removed, groups):
    group, name = key
    opt = current.get(key)
    if opt is not None:
        if opt.deprecated_for_removal:
            reason = opt.deprecated_reason or 'it is deprecated for removal'
            return Finding(Finding.REMOVED, group, name, path,
                           '%s; delete the line' % ' '.join(reason.split()))
        return None
    if key in renamed:
        new_group, opt = renamed[key]
        return Finding(Finding.RENAMED, group, name, path,
                       'renamed [%s] %s; it is still read under the old '
                       'name for now: rename it' % (new_group, opt.dest))
    if key in removed:
        return Finding(Finding.REMOVED, group, name, path,
                       '%s; delete the line' % removed[key])
    if group in groups:
        return Finding(Finding.UNKNOWN, group, name, path,
                       'not an option of this release (removed, or '
                       'misspelled): it is ignored; delete or correct it')
    return None


def audit_conf(conf, options=None):
    """:func:`audit` of the files ``conf`` read.

    :raises cfg.ConfigFileParseError: a file that cannot be parsed.
    """
    options = registered() if options is None else options
    return audit([(p, parse(p)) for p in files_read(conf)], options)
