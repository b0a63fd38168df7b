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
"""resq-manage's revisions as the package and the upgrade guide know them."""

import os
import re

from resq_nova.api.db import migration
from tests import base

UPGRADE = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..',
                       'doc', 'source', 'admin', 'upgrade.rst')


class RevisionTableTest(base.TestCase):
    """The upgrade guide's release-to-revision table lists every revision."""

    def test_every_revision_in_order(self):
        with open(UPGRADE) as f:
            text = f.read()
        start = text.index('The revisions, oldest first')
        table = text[start:text.index('Class paths', start)]
        listed = re.findall(r'^   \* - ``([0-9a-f]{12})``\n     - (\S+)',
                            table, re.M)
        self.assertEqual(migration.revisions(), [r for r, _ in listed])
        self.assertIn('newest is ``%s``' % migration.head(), ' '.join(
            text[start:].split()))


class CompareTest(base.TestCase):

    def test_states(self):
        known = migration.revisions()
        self.assertEqual((migration.EMPTY, known), migration.compare(None))
        self.assertEqual((migration.BEHIND, known[1:]),
                         migration.compare(known[0]))
        self.assertEqual((migration.AT_HEAD, []),
                         migration.compare(known[-1]))
        self.assertEqual((migration.UNKNOWN, []),
                         migration.compare('0123456789ab'))

    def test_resolve(self):
        head = migration.head()
        self.assertEqual(head, migration.resolve('head'))
        self.assertEqual(head, migration.resolve(head[:6]))
        for bad in ('typo', 'base', '+1', ''):
            exc = self.assertRaises(migration.UnknownTarget,
                                    migration.resolve, bad)
            self.assertIn('"head"', str(exc))
