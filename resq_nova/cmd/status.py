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
"""``resq-status upgrade check``: is the cloud ready for this release?

Run with the new package installed, before its services restart (as
``nova-status upgrade check``), on a host with resq-api's configuration
(it reads resq-api's files without ``--config-file``, as ``resq-manage``).
The checks (:class:`Checks`), each Success, Warning or Failure, in a
table or, with ``--json``, one JSON document; the exit status is the worst
of them, oslo.upgradecheck's: 0, 1, 2, and 255 when a check itself broke.

* **Database schema**: ``resq-manage db check``'s verdict
  (:func:`resq_nova.cmd.manage.check`).
* **Agent reports**: every host's last report in resq-api's database
  (table ``hosts``, read with plain SQL so that an older schema reads as
  well): the agent's version against this package's (an agent newer than
  the API means the order was not followed) and the microversion the
  report needed (1.1 when it listed its servers, 1.0 otherwise) against
  what this release's resq-api serves.
* **Configuration options**: options the files set that the release
  renamed or removed, or that it does not know
  (:mod:`resq_nova.conf.audit`).
* **Policy file**: oslo.upgradecheck's check for a JSON policy file, then
  rules the file overrides that no longer exist or whose default changed.
"""

import sys

import microversion_parse
from oslo_config import cfg
from oslo_policy import opts as policy_opts
from oslo_upgradecheck import common_checks
from oslo_upgradecheck import upgradecheck
from pbr import version as pbr_version
import sqlalchemy as sa
import yaml

from resq_common import cmdline
from resq_nova.api.db import api as db_api
from resq_nova.api import microversion
from resq_nova.api.objects import util as obj_util
from resq_nova.api import policies
from resq_nova.cmd import manage
from resq_nova.conf import api as api_conf
from resq_nova.conf import audit

DESCRIPTION = '''Check, before this release's services restart, that the
cloud is ready for it: resq-api's database schema, the agents' reports,
the configuration files' options and the policy file. Run it with the new
package installed, on a host with resq-api's configuration (read without
--config-file as resq-manage reads it). Exit status 0 (every check
Success), 1 (a Warning: read it, the upgrade may be fine), 2 (a Failure:
fix it first) or 255 (a check could not run).'''

PACKAGE = 'resq-nova'
# Rules renamed or removed: old name -> what to do. None yet: 1.0.0 is
# the first release. (A rule whose default changed carries its old
# default as oslo.policy's deprecated_rule; see _check_policy.)
REMOVED_RULES = {}

# The microversion of a report without servers.
FIRST_VERSION = microversion_parse.Version(1, 0)

Code = upgradecheck.Code
Result = upgradecheck.Result


def package_version():
    """This package's version (pbr's: the tag, or a dev version)."""
    return pbr_version.VersionInfo(PACKAGE).version_string()


def _semantic(text):
    try:
        return pbr_version.SemanticVersion.from_pip_string(text)
    except (ValueError, TypeError, AttributeError):
        return None


def report_microversion(row):
    """The microversion a host report needed: 1.1 with servers, else 1.0.

    resq-api stores the servers a report lists (microversion 1.1; an
    agent of 1.1 always sends the list, empty or not) and NULL for a
    report without them; it does not store the version the request asked.
    """
    if row.get('instances') is not None:
        return microversion.HOST_INSTANCES
    return FIRST_VERSION


def agent_findings(rows, api_version):
    """``(code, lines)`` for the hosts' last reports. Pure.

    :param rows: dicts with ``hostname``, ``report`` (the stored JSON
        document, parsed), ``instances`` and ``updated_at``.
    :param api_version: this package's version string.
    """
    api = _semantic(api_version)
    code = Code.SUCCESS
    lines = []
    for row in rows:
        host = row['hostname']
        version = (row.get('report') or {}).get('agent_version')
        mv = report_microversion(row)
        if not microversion.MIN_VERSION <= mv <= microversion.MAX_VERSION:
            code = max(code, Code.FAILURE)
            lines.append(
                'host %s: its agent reports at microversion %s, which this '
                'resq-api does not serve (%s to %s): upgrade that agent '
                'first' % (host, mv, microversion.VERSIONS[0],
                           microversion.VERSIONS[-1]))
            continue
        if not version:
            code = max(code, Code.WARNING)
            lines.append('host %s: its agent does not say its version '
                         '(installed without package metadata?): check it '
                         'with "resq-agent --version" on the host' % host)
            continue
        agent = _semantic(version)
        if api is not None and agent is not None and agent > api:
            code = max(code, Code.WARNING)
            lines.append(
                'host %s: its agent is %s, newer than this resq-api (%s): '
                'upgrade resq-api before the agents (the upgrade guide\'s '
                'order), or reports the agent makes at a newer '
                'microversion are refused' % (host, version, api_version))
    if code == Code.SUCCESS:
        if rows:
            versions = sorted({(r.get('report') or {}).get('agent_version')
                               for r in rows})
            lines.append('%d host(s) report, agents %s, at microversions '
                         'this resq-api serves' % (
                             len(rows), ', '.join(versions)))
        else:
            lines.append('no agent has reported to resq-api yet')
    return code, lines


def read_hosts(engine):
    """Every host report, as :func:`agent_findings` takes them.

    Plain SQL on the columns there are: a database before revision
    3714af25ce43 has no ``instances`` (its reports are 1.0 ones).
    """
    columns = {c['name'] for c in sa.inspect(engine).get_columns('hosts')}
    hosts = sa.table('hosts', *[sa.column(c) for c in (
        'hostname', 'report', 'instances', 'updated_at') if c in columns])
    rows = []
    with engine.connect() as conn:
        for row in conn.execute(sa.select(hosts).order_by(
                hosts.c.hostname)).mappings():
            rows.append({'hostname': row['hostname'],
                         'report': obj_util.loads(row['report']),
                         'instances': obj_util.loads(row.get('instances')),
                         'updated_at': row['updated_at']})
    return rows


def policy_findings(overrides, defaults, removed=None):
    """``(code, lines)`` for the rules a policy file overrides. Pure.

    :param overrides: ``{rule: check string}`` from the file.
    :param defaults: the registered ``RuleDefault`` objects.
    :param removed: ``{rule: advice}`` (default :data:`REMOVED_RULES`).
    """
    removed = REMOVED_RULES if removed is None else removed
    known = {r.name: r for r in defaults}
    renamed = {r.deprecated_rule.name: r for r in defaults
               if getattr(r, 'deprecated_rule', None) is not None
               and r.deprecated_rule.name != r.name}
    lines = []
    for name in sorted(overrides):
        if name in known:
            rule = known[name]
            if getattr(rule, 'deprecated_rule', None) is not None:
                lines.append(
                    '%s: its default changed to "%s" (%s); the file keeps '
                    'its own rule: check it still says what you mean'
                    % (name, rule.check_str, ' '.join(
                        (rule.deprecated_reason or 'see the release '
                         'notes').split())))
        elif name in renamed:
            lines.append('%s: renamed %s; it is still read under the old '
                         'name for now: rename it' % (name,
                                                      renamed[name].name))
        elif name in removed:
            lines.append('%s: %s' % (name, removed[name]))
        else:
            lines.append('%s: not a rule of this release (removed, or '
                         'misspelled): it has no effect; delete or correct '
                         'it ("oslopolicy-sample-generator --namespace '
                         'resq-api" lists the rules)' % name)
    return (Code.WARNING if lines else Code.SUCCESS), lines


class Checks(upgradecheck.UpgradeCommands):
    """resq-nova's upgrade checks, on a parsed ``ConfigOpts``."""

    display_title = 'resq-status upgrade check'

    def __init__(self, conf):
        super().__init__()
        self.conf = conf
        self._engine = None
        self._db_error = None

    def _database(self):
        """The engine, or None with ``_db_error`` saying why."""
        if self._engine is None and self._db_error is None:
            missing = (manage._missing_sqlite(self.conf)
                       if self.conf.database.connection else None)
            if not self.conf.database.connection:
                self._db_error = str(db_api.no_connection(self.conf))
            elif missing:
                # Connecting would create it: a check creates nothing.
                self._db_error = ('the database %s has no file %s' % (
                    manage._url(self.conf), missing))
            else:
                try:
                    db_api.configure(self.conf)
                    self._engine = db_api.get_engine()
                except (sa.exc.SQLAlchemyError, ValueError) as exc:
                    # A URL that cannot be parsed, a driver that cannot
                    # be loaded: a Failure to fix, not a check that
                    # could not run.
                    self._db_error = ('[database] connection %s cannot be '
                                      'used: %s; correct it' % (
                                          manage._url(self.conf),
                                          str(exc).splitlines()[0]))
        return self._engine

    def _check_schema(self):
        if self._database() is None:
            return Result(Code.FAILURE, self._db_error)
        status, what, todo = manage.check(self.conf)
        return Result(Code(status), '%s; %s' % (what, todo))

    def _check_agents(self):
        engine = self._database()
        if engine is None:
            return Result(Code.FAILURE, 'not checked: %s' % self._db_error)
        try:
            if not sa.inspect(engine).has_table('hosts'):
                return Result(Code.WARNING, 'not checked: resq-api\'s '
                              'database has no schema (see Database '
                              'schema)')
            rows = read_hosts(engine)
        except sa.exc.SQLAlchemyError as exc:
            return Result(Code.FAILURE, 'not checked: the database cannot '
                          'be read: %s' % str(exc).splitlines()[0])
        code, lines = agent_findings(rows, package_version())
        return Result(code, '; '.join(lines))

    def _check_options(self):
        files = audit.files_read(self.conf)
        if not files:
            return Result(Code.WARNING, 'not checked: no configuration file '
                          'was read (resq-api\'s: %s); give them with '
                          '--config-file' % api_conf.SEARCHED)
        try:
            findings = audit.audit_conf(self.conf)
        except cfg.ConfigFileParseError as exc:
            return Result(Code.FAILURE, str(exc))
        if not findings:
            return Result(Code.SUCCESS, 'no option renamed, removed or '
                          'unknown in %s' % ', '.join(files))
        return Result(Code.WARNING, '; '.join(str(f) for f in findings))

    def _check_policy_json(self):
        return common_checks.check_policy_json(self, self.conf)

    def _check_policy(self):
        self.conf.register_opts(policy_opts._options,
                                group=policy_opts._option_group)
        path = self.conf.find_file(self.conf.oslo_policy.policy_file)
        if not path:
            return Result(Code.SUCCESS, 'no policy file (%s): every rule '
                          'is the release\'s default' %
                          self.conf.oslo_policy.policy_file)
        try:
            with open(path) as f:
                overrides = yaml.safe_load(f) or {}
        except (OSError, yaml.YAMLError) as exc:
            return Result(Code.FAILURE, 'the policy file %s cannot be read: '
                          '%s' % (path, ' '.join(str(exc).split())))
        if not isinstance(overrides, dict):
            return Result(Code.FAILURE, 'the policy file %s is not a '
                          'mapping of rule names to check strings' % path)
        code, lines = policy_findings(overrides, policies.list_rules())
        if not lines:
            lines = ['%s overrides %d rule(s), none renamed, removed or '
                     'with a changed default' % (path, len(overrides))]
        return Result(code, '%s: %s' % (path, '; '.join(lines))
                      if code != Code.SUCCESS else lines[0])

    _upgrade_checks = (
        ('Database schema', _check_schema),
        ('Agent reports', _check_agents),
        ('Configuration options', _check_options),
        ('Policy file format', _check_policy_json),
        ('Policy rules', _check_policy),
    )


def _add_commands(subparsers):
    upgrade = subparsers.add_parser(
        'upgrade', help='before an upgrade: "upgrade check"')
    sub = upgrade.add_subparsers(dest='upgrade_command')
    sub.required = True
    check = sub.add_parser(
        'check', help='run the checks; exit status 0 (Success), 1 (a '
        'Warning), 2 (a Failure) or 255 (a check could not run)')
    check.add_argument('--json', action='store_true',
                       help='one JSON document instead of the table')


def _register(conf):
    db_api.register_opts(conf)


def main(argv=None):
    conf = cmdline.parse(argv, 'resq-status', DESCRIPTION, (_register,),
                         commands=_add_commands, logs=False,
                         default_config_files=api_conf.config_files(),
                         config_prog=api_conf.PROG)
    # oslo.upgradecheck reads --json from its module's CONF.
    upgradecheck.CONF = conf
    checks = Checks(conf)
    try:
        return int(checks.check())
    except Exception as exc:
        # As oslo.upgradecheck's run(): 255, not one of the checks' codes.
        print('resq-status: a check could not run: %s' % ' '.join(
            str(exc).split()), file=sys.stderr)
        return 255
