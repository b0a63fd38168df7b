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
"""What every resq-nova console script does first: :func:`parse`.

* A configuration file that is missing, unreadable or unparsable, an option
  value that is not valid (in a file or on the command line) and a required
  option without a value are one line on standard error, naming the file
  and the option, and exit status 2 (:data:`USAGE_ERROR`, argparse's):
  never a traceback. So is any other usage error (argparse's own errors
  are one line too, without the usage text).
* Without ``--config-file``, a command reads oslo.config's default files
  for project ``resq``: ``resq.conf`` (what every command shares: the
  clients' credentials, logging) and then ``<command>.conf`` (its own
  options, which win), each from the first of ``~/.resq/``, ``~/``,
  ``/etc/resq/`` and ``/etc/`` that has it (:func:`searched`); neither
  has to exist. A command working on another's state reads that
  command's files instead (``resq-manage``: resq-api's; ``config_prog``).
  ``--config-file`` replaces that search (and must name files that
  exist); ``--config-dir`` adds a directory's files to it.
* ``--config-file`` and ``--config-dir`` may come before or after the
  subcommand (:func:`hoist`).
* ``--version`` prints ``<command> <version>``: resq-nova's, as pbr
  gives it (:func:`version`), and exits 0.
* ``--help`` starts with the command's description and lists the
  command's own options and subcommands, each with its default; oslo.log's
  logging options stay accepted but are listed by ``--help-logging`` only
  (a last line of ``--help`` says so).
* :func:`quiet_eventlet` drops eventlet's deprecation banner. The ``cmd``
  packages call it when they are imported, before the imports that pull
  eventlet in where it cannot be avoided (oslo.privsep's daemon module,
  oslo.messaging).

It relies on two private names of oslo.config: the parser class
(``_CachedArgumentParser``, subclassed for the help and the error line)
and ``ConfigOpts._validate_cli_options`` (replaced to word a bad value).
Were they to change, the commands would still run, with oslo.config's own
help and messages.
"""

import argparse
import copy
import os
import re
import sys
import textwrap
import warnings

from oslo_config import cfg
from oslo_config import types

# argparse's exit status for a usage error; a bad configuration is one.
USAGE_ERROR = 2

WIDTH = 79

_CONFIG_FILE_HELP = ('read this configuration file (repeat for more: later '
                     'files win)%s (default: %s)')
_ANYWHERE = '; before or after the subcommand'
_CONFIG_DIR_HELP = ('read every *.conf file of this directory, in name '
                    'order, after the --config-file files%s (default: %s)')


# oslo.config's default search for project 'resq' (find_config_files).
PROJECT = 'resq'
# The distribution whose version --version prints.
PACKAGE = 'resq-nova'
SEARCH_DIRS = ('~/.resq/', '~/', '/etc/resq/', '/etc/')


def searched(prog):
    """The default configuration files of ``prog``, in words."""
    return '%s.conf and %s.conf in %s' % (
        PROJECT, prog, ', '.join(SEARCH_DIRS))


def quiet_eventlet():
    """Drop eventlet's ``EventletDeprecationWarning`` banner.

    Importing eventlet prints an 8-line deprecation warning; oslo.privsep's
    daemon module and oslo.messaging import it whether or not it is used.
    Only that warning is dropped (by its message, as its category is
    eventlet's own class).
    """
    warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')


class UsageError(Exception):
    """A configuration or command line the command cannot run with."""


def integer(minimum=None, maximum=None, why=''):
    """An argparse ``type``: a whole number within bounds.

    :param why: appended to the message of a number out of bounds.
    """
    def convert(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                'must be a whole number, got %r' % text)
        if minimum == 1 and maximum is None and value < 1:
            raise argparse.ArgumentTypeError(
                'must be a positive whole number, got %r%s' % (text, why))
        if ((minimum is not None and value < minimum)
                or (maximum is not None and value > maximum)):
            raise argparse.ArgumentTypeError('must be %s, got %r%s' % (
                _bounds(minimum, maximum), text, why))
        return value
    return convert


def number(minimum=None, above=None):
    """An argparse ``type``: a finite number, ``>= minimum``/``> above``."""
    def convert(text):
        try:
            value = float(text)
        except ValueError:
            value = float('nan')
        if value != value or value in (float('inf'), float('-inf')):
            raise argparse.ArgumentTypeError('must be a number, got %r'
                                             % text)
        if above is not None and value <= above:
            raise argparse.ArgumentTypeError(
                'must be greater than %s, got %r' % (above, text))
        if minimum is not None and value < minimum:
            raise argparse.ArgumentTypeError(
                'must be at least %s, got %r' % (minimum, text))
        return value
    return convert


def _bounds(minimum, maximum):
    if maximum is None:
        return 'a whole number of at least %d' % minimum
    if minimum is None:
        return 'a whole number of at most %d' % maximum
    return 'a whole number from %d to %d' % (minimum, maximum)


class Positive(types.Float):
    """An oslo.config type: a number greater than 0."""

    def __call__(self, value):
        value = super().__call__(value)
        if not value > 0:
            raise ValueError('must be greater than 0')
        return value


def hoist(argv):
    """``argv`` with ``--config-file``/``--config-dir`` moved to the front.

    oslo.config knows them before the subcommand only; moved, they may be
    given anywhere (their order among themselves is kept). Nothing after
    ``--`` is moved.
    """
    front, rest = [], []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == '--':
            rest.extend(argv[i:])
            break
        if arg in ('--config-file', '--config-dir'):
            front.extend(argv[i:i + 2])
            i += 2
            continue
        if arg.startswith(('--config-file=', '--config-dir=')):
            front.append(arg)
        else:
            rest.append(arg)
        i += 1
    return front + rest


def _fill(text):
    return '\n\n'.join(textwrap.fill(' '.join(p.split()), WIDTH,
                                     break_on_hyphens=False)
                       for p in text.strip().split('\n\n'))


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Each option with its default; descriptions wrapped by :func:`_fill`.

    The default is shown when there is one (not None, False or empty) and
    the help does not already say it.
    """

    def _get_help_string(self, action):
        text = action.help or ''
        if ('default' not in text and _shown(action.default)
                and action.default is not argparse.SUPPRESS
                and (action.option_strings or action.nargs in ('?', '*'))):
            text += ' (default: %(default)s)'
        return text


def _shown(default):
    """Whether ``--help`` gives this default (0 yes, None or False no)."""
    return not (default is None or default is False
                or default in ('', [], ()))


class _Parser(cfg._CachedArgumentParser):
    """oslo.config's parser with resq-nova's help and one-line errors.

    ``hidden`` maps the options ``--help`` leaves out (oslo.log's) to
    their help, which ``--help-logging`` shows.
    """

    def __init__(self, *args, **kwargs):
        kwargs.setdefault('formatter_class', _Formatter)
        super().__init__(*args, **kwargs)
        self.hidden_dests = frozenset()
        self.hidden = {}
        self.has_commands = False
        # What oslo.config reads without --config-file/--config-dir.
        self.config_defaults = {}
        # The program whose default files those are (its own by default).
        self.config_prog = None

    def initialize_parser_arguments(self):
        super().initialize_parser_arguments()
        for action in self._actions:
            if action.help is argparse.SUPPRESS:
                continue
            if (action.dest in self.hidden_dests
                    or (action.help or '').startswith('The inverse of --')):
                self.hidden[action] = action.help
                action.help = argparse.SUPPRESS
            elif (action.dest in ('config_file', 'config_dir')
                  and not isinstance(action, _ConfigFileHere)):
                found = (self.config_defaults.get(action.dest)
                         or action.default or ())
                shown = ', '.join(found) or (
                    'none found: %s' % searched(self.config_prog
                                                or self.prog)
                    if action.dest == 'config_file' else 'none')
                action.help = (_CONFIG_FILE_HELP if action.dest ==
                               'config_file' else _CONFIG_DIR_HELP) % (
                    _ANYWHERE if self.has_commands else '',
                    shown.replace('%', '%%'))

    def format_help(self):
        """argparse's help, the description first."""
        formatter = self._get_formatter()
        formatter.add_text(self.description)
        formatter.add_usage(self.usage, self._actions,
                            self._mutually_exclusive_groups)
        for group in self._action_groups:
            formatter.start_section(group.title)
            formatter.add_text(group.description)
            formatter.add_arguments(group._group_actions)
            formatter.end_section()
        formatter.add_text(self.epilog)
        return formatter.format_help()

    def format_logging_help(self):
        formatter = self._get_formatter()
        formatter.add_text(_fill(
            'The logging options of %s (oslo.log). They may be set in '
            '[DEFAULT] of the configuration file as well, with underscores '
            '(log_file = PATH). --shell_completion bash|zsh prints a shell '
            'completion script.' % self.prog))
        formatter.start_section('logging options')
        shown = []
        for action, text in self.hidden.items():
            if (action.dest not in self.hidden_dests
                    or action.dest == 'shell_completion'):
                continue
            action = copy.copy(action)
            action.help = text
            shown.append(action)
        formatter.add_arguments(sorted(shown,
                                       key=lambda a: a.option_strings))
        formatter.end_section()
        return formatter.format_help()

    def error(self, message):
        """One line: what is wrong, and where help is."""
        self.exit(USAGE_ERROR, '%s: %s (see %s --help)\n' % (
            self.prog, message.replace('argument --', '--'), self.prog))


class _HelpLogging(argparse.Action):

    def __call__(self, parser, namespace, values, option_string=None):
        parser.initialize_parser_arguments()
        parser._print_message(parser.format_logging_help(), sys.stdout)
        parser.exit()


class _Conf(cfg.ConfigOpts):
    """A ``ConfigOpts`` parsing with :class:`_Parser`."""

    hidden = frozenset()
    has_commands = False
    config_prog = None

    def _pre_setup(self, project, prog, version, *args, **kwargs):
        result = super()._pre_setup(project, prog, version, *args, **kwargs)
        old = self._oparser
        self._oparser = _Parser(prog=old.prog, usage=old.usage,
                                description=old.description,
                                epilog=old.epilog)
        if version is not None:
            self._oparser.add_parser_argument(
                self._oparser, '--version', action='version',
                version='%(prog)s ' + version,
                help='print the version of resq-nova and exit')
        self._oparser.hidden_dests = self.hidden
        self._oparser.has_commands = self.has_commands
        self._oparser.config_prog = self.config_prog
        # (prog, default config files, default config dirs)
        self._oparser.config_defaults = {'config_file': result[1],
                                         'config_dir': result[2]}
        if self.hidden:
            self._oparser.add_argument('--help-logging', nargs=0,
                                       action=_HelpLogging,
                                       help=argparse.SUPPRESS)
        return result

    def _validate_cli_options(self, namespace):
        """A bad value of a command line option: :class:`UsageError`."""
        for opt, group in sorted(self._all_cli_opts(),
                                 key=lambda x: x[0].name):
            group_name = group.name if group else None
            try:
                value, loc = opt._get_from_namespace(namespace, group_name)
            except KeyError:
                continue
            try:
                self._convert_value(self._substitute(
                    value, group=group, namespace=namespace), opt)
            except ValueError as exc:
                where = getattr(loc, 'location', None)
                if where == cfg.Locations.command_line:
                    raise UsageError('--%s %s: %s' % (
                        opt.name, value, _reason(opt, exc)))
                raise UsageError('[%s] %s in %s is not valid: %s; fix it '
                                 'or remove it' % (
                                     group_name or 'DEFAULT', opt.dest,
                                     getattr(loc, 'detail', '?'),
                                     _reason(opt, exc)))


def _reason(opt, exc):
    text = str(exc)
    if text.startswith('invalid literal for int()'):
        return 'must be a whole number'
    if text.startswith('could not convert string to float'):
        return 'must be a number'
    return text[:1].lower() + text[1:]


def _config_error(exc, files=()):
    """The one line for an oslo.config error while parsing.

    :param files: the configuration files read, for a required option.
    """
    if isinstance(exc, cfg.ConfigFilesNotFoundError):
        named = os.environ.get('RESQ_API_CONFIG', '').split(',')
        if any(f in named for f in exc.config_files):
            # resq-api's variable (its systemd unit, uwsgi) named it.
            return ('cannot read the configuration file %s: no such file; '
                    'it is named by $RESQ_API_CONFIG (%s): correct the '
                    'variable (in the unit or environment that sets it) '
                    'or create the file'
                    % (', '.join(exc.config_files),
                       os.environ['RESQ_API_CONFIG']))
        return ('cannot read the configuration file %s: no such file; give '
                'an existing file with --config-file'
                % ', '.join(exc.config_files))
    if isinstance(exc, cfg.ConfigFilesPermissionDeniedError):
        return ('cannot read the configuration file %s: permission denied; '
                'make it readable by this user (uid %d) or give another '
                'with --config-file' % (', '.join(exc.config_files),
                                        os.getuid()))
    if isinstance(exc, cfg.ConfigDirNotFoundError):
        return ('cannot read the configuration directory %s: no such '
                'directory; give an existing one with --config-dir'
                % exc.config_dir)
    if isinstance(exc, cfg.ConfigFileParseError):
        return ('the configuration file %s cannot be parsed: %s; it holds '
                '[section] lines and "name = value" lines'
                % (exc.config_file, ' '.join(str(exc.msg).split())))
    if isinstance(exc, cfg.RequiredOptError):
        group = getattr(exc.group, 'name', exc.group) or 'DEFAULT'
        where = ('in %s' % ', '.join(files) if files else
                 'in a configuration file given with --config-file')
        return '[%s] %s needs a value: set it %s' % (
            group, exc.opt_name, where)
    return 'configuration: %s' % ' '.join(str(exc).split())


def _value_error(group, name, exc):
    """The one line for a bad value read from a file or the environment."""
    text = str(exc)
    source = re.search(r"detail='([^']*)'", text)
    reason = text.split(' is not valid: ', 1)[-1]
    return '[%s] %s%s is not valid: %s; fix it or remove it' % (
        group or 'DEFAULT', name,
        ' in %s' % source.group(1) if source else '',
        _reason(None, ValueError(reason)))


def check_values(conf):
    """Read every option once, so that a bad value fails now.

    oslo.config converts values when they are read: without this a bad
    value in the file would end a command part-way, with a traceback.

    :raises UsageError: naming the option, its section and its file.
    """
    for key in list(conf):
        try:
            value = conf[key]
        except (cfg.ConfigSourceValueError,
                cfg.TemplateSubstitutionError) as exc:
            raise UsageError(_value_error(None, key, exc))
        if not isinstance(value, cfg.ConfigOpts.GroupAttr):
            continue
        for name in list(value):
            try:
                value[name]
            except (cfg.ConfigSourceValueError,
                    cfg.TemplateSubstitutionError) as exc:
                raise UsageError(_value_error(key, name, exc))


class _ConfigFileHere(argparse.Action):
    """``--config-file`` after a subcommand, for ``--help`` only.

    :func:`hoist` moves the option before the subcommand; the subcommand's
    help lists it so that it reads as one of its options.
    """

    def __call__(self, parser, namespace, values, option_string=None):
        parser.error('give %s before the subcommand' % option_string)


def _finish_subparsers(subparsers):
    """Descriptions, --config-file and the help format of subcommands."""
    helps = {a.dest: a.help for a in subparsers._choices_actions}
    for name, parser in subparsers.choices.items():
        parser.formatter_class = _Formatter
        if parser.description is None and helps.get(name):
            parser.description = _fill(helps[name])
        group = parser.add_argument_group('configuration')
        group.add_argument('--config-file', metavar='PATH',
                           action=_ConfigFileHere, default=argparse.SUPPRESS,
                           help='a configuration file, as before the '
                           'subcommand')
        group.add_argument('--config-dir', metavar='DIR',
                           action=_ConfigFileHere, default=argparse.SUPPRESS,
                           help='a configuration directory, as before the '
                           'subcommand')
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                _finish_subparsers(action)


def _subcommands(handler):
    def add(subparsers):
        subparsers.metavar = 'COMMAND'
        handler(subparsers)
        _finish_subparsers(subparsers)
    return add


def _logging_dests():
    from oslo_log import _options

    return frozenset(opt.dest for _, opts in _options.list_opts()
                     for opt in opts)


def _documented(opts):
    """Copies of oslo.config CLI options whose help gives the default."""
    out = []
    for opt in opts:
        opt = copy.copy(opt)
        default = opt.default
        if _shown(default) and 'default' not in (opt.help or ''):
            if isinstance(default, (list, tuple)):
                default = ', '.join(str(d) for d in default)
            opt.help = '%s (default: %s)' % (
                opt.help or '', str(default).replace('%', '%%'))
        out.append(opt)
    return out


def _epilog(prog, commands, logs):
    lines = []
    if commands:
        lines.append('"%s COMMAND --help" describes a command and its '
                     'options.' % prog)
    if logs:
        lines.append('Logging options (oslo.log: --debug, --log-file PATH, '
                     '--log-dir DIR, --use-syslog, ...): see --help-logging.')
    return '\n'.join(textwrap.fill(line, WIDTH, break_on_hyphens=False)
                     for line in lines) or None


def version():
    """resq-nova's version, as pbr gives it (the tag, or a dev version)."""
    from pbr import version as pbr_version

    try:
        # release_string: 1.0.0.dev570 on a development build, where
        # version_string would say 1.0.0, a release it is not.
        return pbr_version.VersionInfo(PACKAGE).release_string()
    except Exception:
        # Not installed (a source tree on sys.path): say so, not fail.
        return 'unknown (resq-nova is not installed)'


def fail(prog, message):
    """Print ``prog: message`` on standard error; exit with status 2."""
    print('%s: %s' % (prog, message), file=sys.stderr)
    raise SystemExit(USAGE_ERROR)


def parse(argv, prog, description, register=(), cli_opts=(), commands=None,
          logs=True, logs_to_stderr=False, default_config_files=None,
          setup_logging=True, config_prog=None):
    """A fresh ``ConfigOpts`` for command ``prog``, parsed from ``argv``.

    :param argv: the arguments (default ``sys.argv[1:]``).
    :param description: one paragraph, the start of ``--help``.
    :param register: functions ``conf -> None`` registering option groups.
    :param cli_opts: oslo.config options of the command line.
    :param commands: an argparse subparsers handler: ``conf.command``.
    :param logs: register oslo.log's options and set logging up.
    :param setup_logging: with ``logs``, call ``logging.setup`` (False
        for a caller that does it itself).
    :param logs_to_stderr: logs default to standard error (stdout carries
        the command's documents).
    :param default_config_files: instead of oslo.config's search
        (:func:`searched`; None: the search).
    :param config_prog: the program whose files ``default_config_files``
        are, when not ``prog`` (for ``--help``'s "none found").
    :raises SystemExit: status 2, after one line on standard error, for a
        configuration or command line it cannot run with.
    """
    conf = _Conf()
    conf.config_prog = config_prog
    if logs:
        from oslo_log import log as logging

        logging.register_options(conf)
        if logs_to_stderr:
            conf.set_default('use_stderr', True)
        conf.hidden = _logging_dests() | {'shell_completion'}
    else:
        conf.hidden = frozenset(['shell_completion'])
    for fn in register:
        fn(conf)
    conf.register_cli_opts(_documented(cli_opts))
    if commands is not None:
        conf.has_commands = True
        conf.register_cli_opt(cfg.SubCommandOpt(
            'command', title='commands', handler=_subcommands(commands)))
    try:
        conf(hoist(sys.argv[1:] if argv is None else list(argv)),
             project=PROJECT, prog=prog, description=_fill(description),
             epilog=_epilog(prog, commands, logs),
             default_config_files=default_config_files, version=version())
        check_values(conf)
    except UsageError as exc:
        fail(prog, str(exc))
    except cfg.Error as exc:
        fail(prog, _config_error(exc, _files_read(conf)))
    except OSError as exc:
        # A --config-file that is a directory, say.
        fail(prog, 'cannot read the configuration file %s: %s; give a '
             'file with --config-file' % (exc.filename, exc.strerror))
    if logs and setup_logging:
        _setup_logging(conf, prog)
    return conf


def _files_read(conf):
    try:
        return list(conf.config_file or ())
    except cfg.Error:
        return []


def _setup_logging(conf, prog):
    from oslo_log import log as logging

    try:
        logging.setup(conf, prog)
    except OSError as exc:
        fail(prog, 'cannot log to %s: %s; check [DEFAULT] log_file and '
             'log_dir' % (exc.filename, exc.strerror))
