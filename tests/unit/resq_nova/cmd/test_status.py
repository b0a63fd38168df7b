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
"""``resq-status upgrade check`` and ``resq-manage db history``.

The checks' rules on plain data, then the command end to end on a SQLite
database walked by the real migrations, with configuration and policy
files written as an operator would.
"""

import datetime
import io
import json
import os
import re
from unittest import mock

import fixtures
from oslo_config import cfg
from oslo_policy import policy
import sqlalchemy as sa

from resq_nova.api.db import api as db_api
from resq_nova.api.db import migration
from resq_nova.api import microversion
from resq_nova.cmd import manage
from resq_nova.cmd import status
from resq_nova.conf import audit
from tests import base
from tests.fixtures import database


def host(name, version='1.0.0', instances=(), report=None):
    return {'hostname': name,
            'report': report if report is not None else {
                'domains': [], 'agent_version': version},
            'instances': None if instances is None else list(instances),
            'updated_at': None}


class AgentFindingsTest(base.TestCase):

    def test_agents_at_the_api_version_or_older(self):
        code, lines = status.agent_findings(
            [host('c1'), host('c2', '0.9.0', instances=None)], '1.0.0')
        self.assertEqual(status.Code.SUCCESS, code)
        self.assertEqual(['2 host(s) report, agents 0.9.0, 1.0.0, at '
                          'microversions this resq-api serves'], lines)

    def test_no_report_yet(self):
        self.assertEqual(
            (status.Code.SUCCESS, ['no agent has reported to resq-api yet']),
            status.agent_findings([], '1.0.0'))

    def test_agent_newer_than_the_api(self):
        code, lines = status.agent_findings(
            [host('c1'), host('c2', '1.1.0')], '1.0.0')
        self.assertEqual(status.Code.WARNING, code)
        self.assertEqual(1, len(lines))
        self.assertIn('host c2: its agent is 1.1.0, newer than this '
                      'resq-api (1.0.0): upgrade resq-api before the agents',
                      lines[0])

    def test_agent_without_a_version(self):
        code, lines = status.agent_findings(
            [host('c1', report={'domains': []})], '1.0.0')
        self.assertEqual(status.Code.WARNING, code)
        self.assertIn('host c1: its agent does not say its version',
                      lines[0])

    def test_microversion_no_longer_served_fails(self):
        # A release that stops serving 1.0: a host whose last report
        # listed no servers (a 1.0 report) would be refused.
        self.useFixture(fixtures.MonkeyPatch(
            'resq_nova.api.microversion.MIN_VERSION',
            microversion.HOST_INSTANCES))
        code, lines = status.agent_findings(
            [host('c1'), host('c2', instances=None)], '1.0.0')
        self.assertEqual(status.Code.FAILURE, code)
        self.assertEqual(1, len(lines))
        self.assertIn('host c2: its agent reports at microversion 1.0, '
                      'which this resq-api does not serve', lines[0])

    def test_report_microversion(self):
        self.assertEqual('1.1', str(status.report_microversion(
            host('c1', instances=[]))))
        self.assertEqual('1.0', str(status.report_microversion(
            host('c1', instances=None))))


def opts():
    return [
        ('resq_optimizer', cfg.IntOpt('time_limit', deprecated_name='limit')),
        ('resq_optimizer', cfg.BoolOpt('old_switch',
                                       deprecated_for_removal=True,
                                       deprecated_reason='It does nothing '
                                       'since 1.1.0.')),
        ('api', cfg.StrOpt('auth_strategy',
                           deprecated_opts=[cfg.DeprecatedOpt(
                               'auth', group='DEFAULT')])),
        ('placement', cfg.StrOpt('auth_type')),
        ('placement', cfg.StrOpt('region_name')),
    ]


class AuditTest(base.TestCase):

    def kinds(self, sections, removed=None):
        return [(f.kind, f.group, f.name) for f in audit.audit(
            [('/etc/resq/resq-api.conf', sections)], opts(), removed)]

    def test_current_options_are_fine(self):
        self.assertEqual([], self.kinds({
            'resq_optimizer': {'time_limit': ['5']},
            'api': {'auth_strategy': ['noauth2']},
            'DEFAULT': {'debug': ['true']}}))

    def test_renamed_in_its_group_or_another(self):
        findings = audit.audit([('/f.conf', {
            'resq_optimizer': {'limit': ['5']},
            'DEFAULT': {'auth': ['keystone']}})], opts())
        self.assertEqual([('renamed', 'resq_optimizer', 'limit'),
                          ('renamed', 'DEFAULT', 'auth')],
                         [(f.kind, f.group, f.name) for f in findings])
        self.assertEqual('[resq_optimizer] limit in /f.conf: renamed '
                         '[resq_optimizer] time_limit; it is still read '
                         'under the old name for now: rename it',
                         str(findings[0]))
        self.assertIn('renamed [api] auth_strategy', str(findings[1]))

    def test_removed_and_deprecated_for_removal(self):
        findings = audit.audit([('/f.conf', {'resq_optimizer': {
            'old_switch': ['true'], 'gone': ['1']}})], opts(),
            {('resq_optimizer', 'gone'): 'removed in 2.0.0: the optimizer '
             'always does it'})
        self.assertEqual(['removed', 'removed'], [f.kind for f in findings])
        self.assertIn('It does nothing since 1.1.0.; delete the line',
                      str(findings[0]))
        self.assertIn('removed in 2.0.0', str(findings[1]))

    def test_unknown_names_only_in_resq_groups(self):
        # [placement] takes the auth plugin's options: not checked; nor is
        # [DEFAULT] (oslo.log's) or a group resq-nova does not register.
        self.assertEqual([('unknown', 'resq_optimizer', 'tiem_limit')],
                         self.kinds({
                             'resq_optimizer': {'tiem-limit': ['5']},
                             'placement': {'password': ['x']},
                             'DEFAULT': {'log_dir': ['/var/log']},
                             'keystone_authtoken': {'x': ['y']}}))

    def test_every_namespace_loads(self):
        options = audit.registered()
        groups = {g for g, _ in options}
        for group in ('api', 'database', 'resq', 'resq_optimizer',
                      'resq_agent', 'resq_profiler', 'placement'):
            self.assertIn(group, groups)
        owned = audit.owned(options)
        self.assertIn('resq_agent', owned)
        self.assertNotIn('placement', owned)


class PolicyFindingsTest(base.TestCase):

    def test_rules(self):
        defaults = [
            policy.RuleDefault('resq:hosts:read', 'role:admin'),
            policy.RuleDefault(
                'resq:hosts:list', 'role:reader',
                deprecated_rule=policy.DeprecatedRule(
                    'resq:hosts:index', 'role:admin',
                    deprecated_reason='readers list hosts',
                    deprecated_since='1.1.0')),
        ]
        code, lines = status.policy_findings(
            {'resq:hosts:read': 'role:admin', 'resq:hosts:index': '@',
             'resq:nope': '@'}, defaults)
        self.assertEqual(status.Code.WARNING, code)
        self.assertEqual(2, len(lines))
        self.assertIn('resq:hosts:index: renamed resq:hosts:list', lines[0])
        self.assertIn('resq:nope: not a rule of this release', lines[1])
        self.assertEqual((status.Code.SUCCESS, []), status.policy_findings(
            {'resq:hosts:read': '@'}, defaults))

    def test_the_release_rules_have_nothing_to_say(self):
        from resq_nova.api import policies

        rules = policies.list_rules()
        self.assertEqual((status.Code.SUCCESS, []), status.policy_findings(
            {r.name: r.check_str for r in rules}, rules))


class HistoryLinesTest(base.TestCase):

    REVS = [('a1', 'first'), ('b2', 'second'), ('c3', 'third')]

    def test_marks(self):
        def split(lines):
            return [tuple(re.split(r'  +', line)) for line in lines]

        self.assertEqual([('a1 (current)', 'first'),
                          ('b2 (pending)', 'second'),
                          ('c3 (pending, head)', 'third')],
                         split(manage.history_lines('a1', self.REVS)))
        self.assertEqual([('c3 (current, head)', 'third')],
                         split(manage.history_lines('c3', self.REVS)[-1:]))

    def test_empty_and_unknown(self):
        self.assertIn('no schema', manage.history_lines(None, self.REVS)[-1])
        self.assertIn('at zz, which this package does not know',
                      manage.history_lines('zz', self.REVS)[-1])


class CommandTest(base.TestCase):
    """The commands' main() on a SQLite file, as an operator runs them."""

    def setUp(self):
        super().setUp()
        self.db = self.useFixture(database.Migrated('sqlite', self.skipTest,
                                                    upgrade=False))
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.conf = self.write('resq-api.conf', '[database]\nconnection = '
                               '%s\n' % self.db.url)
        self.addCleanup(db_api.reset)

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, 'w') as f:
            f.write(text)
        return path

    def run_main(self, main, *argv):
        out, err = io.StringIO(), io.StringIO()
        with mock.patch('sys.stdout', out), mock.patch('sys.stderr', err):
            rc = main(list(argv))
        return rc, out.getvalue(), err.getvalue()

    def check(self, *files):
        argv = []
        for path in files or (self.conf,):
            argv += ['--config-file', path]
        rc, out, err = self.run_main(status.main, *argv,
                                     'upgrade', 'check', '--json')
        self.assertEqual('', err)
        doc = json.loads(out)
        return rc, {c['check']: (c['result'], c['details'])
                    for c in doc['checks']}

    def add_host(self, name, version, instances):
        now = datetime.datetime.now(datetime.timezone.utc).replace(
            tzinfo=None)
        values = {'hostname': name, 'updated_at': now, 'report': json.dumps(
            {'domains': [], 'agent_version': version})}
        if instances is not None:
            values['instances'] = instances
        hosts = sa.table('hosts', *map(sa.column, values))
        with db_api.get_engine().begin() as conn:
            conn.execute(sa.insert(hosts).values(**values))

    def test_empty_database_fails(self):
        # A database file without the schema (a missing file is said so).
        open(self.db.url.split('sqlite:///', 1)[1], 'a').close()
        rc, checks = self.check()
        self.assertEqual(2, rc)
        self.assertEqual(2, checks['Database schema'][0])
        self.assertIn('has no resq-api schema', checks['Database schema'][1])
        self.assertEqual(1, checks['Agent reports'][0])

    def test_an_unparsable_url_is_a_failure_of_both_commands(self):
        bad = self.write('bad.conf', '[database]\nconnection = '
                         'mysql+pymysql//root@127.0.0.1/x\n')
        rc, checks = self.check(bad)
        self.assertEqual(2, rc)
        self.assertEqual(2, checks['Database schema'][0])
        self.assertIn('(unparsable URL) cannot be used',
                      checks['Database schema'][1])
        rc, out, err = self.run_main(manage.main, '--config-file', bad,
                                     'db', 'check')
        self.assertEqual(2, rc)
        self.assertEqual(1, len(err.splitlines()), err)
        self.assertIn('correct it in %s' % bad, err)

    def test_missing_database_file_fails_saying_so(self):
        rc, checks = self.check()
        self.assertEqual(2, rc)
        self.assertEqual(2, checks['Database schema'][0])
        self.assertIn('no file', checks['Database schema'][1])
        # The agents' check did not connect (which creates the file).
        self.assertIn('no file', checks['Agent reports'][1])
        path = self.db.url.split('sqlite:///', 1)[1]
        self.assertFalse(os.path.exists(path))

    def test_a_database_in_a_missing_directory_says_which(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'gone', 'resq.sqlite')
        conf = self.write('resq-api.conf', '[database]\nconnection = '
                          'sqlite:///%s\n' % path)
        rc, out, err = self.run_main(manage.main, '--config-file', conf,
                                     'db', 'sync')
        self.assertEqual(1, rc)
        self.assertIn('that directory %s exists and this user'
                      % os.path.dirname(path), err)

    def test_behind_then_at_head_with_agents(self):
        migration.upgrade(migration.revisions()[0])
        rc, checks = self.check()
        self.assertEqual(1, rc)
        self.assertIn('%d migration(s) pending' % (
            len(migration.revisions()) - 1), checks['Database schema'][1])
        # The first schema has no hosts.instances: still read.
        self.add_host('c1', '1.0.0', None)
        self.assertEqual((0, '1 host(s) report, agents 1.0.0, at '
                          'microversions this resq-api serves'),
                         self.check()[1]['Agent reports'])
        migration.upgrade()
        self.add_host('c2', status.package_version(), '[]')
        rc, checks = self.check()
        self.assertEqual(0, rc, checks)
        self.assertEqual(0, checks['Database schema'][0])
        self.assertEqual(0, checks['Configuration options'][0])
        self.assertEqual(0, checks['Policy rules'][0])

    def test_agent_newer_than_the_package_warns(self):
        migration.upgrade()
        self.add_host('c9', '99.0.0', '[]')
        rc, checks = self.check()
        self.assertEqual(1, rc)
        self.assertIn('host c9: its agent is 99.0.0, newer than this '
                      'resq-api', checks['Agent reports'][1])

    def test_options_of_every_file_read(self):
        migration.upgrade()
        other = self.write('resq.conf', '[placement]\nauth_plugin = '
                           'password\n[resq_agent]\nhost_report_intervall = '
                           '30\n')
        rc, checks = self.check(other, self.conf)
        self.assertEqual(1, rc)
        code, details = checks['Configuration options']
        self.assertEqual(1, code)
        self.assertIn('[placement] auth_plugin in %s: renamed [placement] '
                      'auth_type' % other, details)
        self.assertIn('[resq_agent] host_report_intervall in %s: not an '
                      'option of this release' % other, details)

    def test_policy_files(self):
        migration.upgrade()
        self.write('policy.yaml', '"resq:hosts:read": "role:admin"\n'
                   '"resq:hosts:squat": "@"\n')
        rc, checks = self.check()
        self.assertEqual(1, rc)
        self.assertEqual(0, checks['Policy file format'][0])
        self.assertIn('resq:hosts:squat: not a rule of this release',
                      checks['Policy rules'][1])
        # oslo.upgradecheck's own check: a JSON policy file fails.
        os.unlink(os.path.join(self.dir, 'policy.yaml'))
        self.write('policy.json', '{"resq:hosts:read": "role:admin"}')
        conf = self.write('json.conf', '[oslo_policy]\npolicy_file = '
                          'policy.json\n')
        rc, checks = self.check(self.conf, conf)
        self.assertEqual(2, rc)
        self.assertEqual(2, checks['Policy file format'][0])

    def test_without_a_connection(self):
        empty = self.write('empty.conf', '[DEFAULT]\n')
        rc, checks = self.check(empty)
        self.assertEqual(2, rc)
        self.assertIn('[database] connection', checks['Database schema'][1])

    def test_table_output_and_usage(self):
        migration.upgrade()
        rc, out, err = self.run_main(status.main, '--config-file', self.conf,
                                     'upgrade', 'check')
        self.assertEqual(0, rc, out)
        self.assertIn('| Check: Database schema', out)
        self.assertIn('Result: Success', out)
        exc = self.assertRaises(SystemExit, self.run_main, status.main,
                                '--config-file', self.conf, 'upgrade')
        self.assertEqual(2, exc.code)

    def test_db_history(self):
        migration.upgrade(migration.revisions()[1])
        rc, out, err = self.run_main(manage.main, '--config-file',
                                     self.conf, 'db', 'history')
        self.assertEqual(0, rc, err)
        lines = out.splitlines()
        revs = migration.revisions()
        self.assertEqual(len(revs) + 1, len(lines))
        self.assertTrue(lines[2].startswith('%s (current)' % revs[1]))
        self.assertTrue(lines[3].startswith('%s (pending)' % revs[2]))
        self.assertTrue(lines[-1].startswith('%s (pending, head)'
                                             % revs[-1]))
