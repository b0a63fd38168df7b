"""The operator's walk-through cannot drift from what the commands print.

``tools/walkthrough.py`` runs every command of
``doc/source/admin/walkthrough.rst`` on Nova's functional harness and
writes their output to ``doc/source/admin/walkthrough/``, which the guide
includes. This test runs the same walk into a temporary directory and
compares it with the committed files: the same files, the same command
lines, and the same output line by line once the values that change from
run to run (UUIDs, plan ids, numbers, column widths, which of the two
alike hosts the scheduler fills first) are blanked.
"""

import importlib.util
import os
import re

import testtools

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
spec = importlib.util.spec_from_file_location(
    'walkthrough', os.path.join(ROOT, 'tools', 'walkthrough.py'))
walkthrough = importlib.util.module_from_spec(spec)
spec.loader.exec_module(walkthrough)

_UUID = re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-'
                   r'[0-9a-f]{12}')
_PLAN = re.compile(r'plan-\d{8}T\d{6}-[0-9a-f]+')
_NUMBER = re.compile(r'\d+(\.\d+)?')


def shape(text):
    """The text with what varies between runs blanked."""
    lines = []
    for line in text.splitlines():
        line = _UUID.sub('<uuid>', line)
        line = _PLAN.sub('<plan>', line)
        line = _NUMBER.sub('#', line)
        line = re.sub(r'-+', '-', re.sub(r' +', ' ', line))
        lines.append(line.rstrip())
    # A table's rows of the two alike hosts come in host name order, and
    # which host the scheduler filled (or the optimizer freed) is a tie.
    out, rows = [], []
    for line in lines + [None]:
        if line is not None and line.startswith('| host#'):
            rows.append(line)
            continue
        out += sorted(rows)
        rows = []
        if line is not None:
            out.append(line)
    return out


def command(text):
    """The command line of an output, its ids and host numbers blanked.

    The two hosts are alike: which one the scheduler fills first is a tie.
    """
    return re.sub(r'host\d', 'host#', _PLAN.sub('<plan>', _UUID.sub(
        '<uuid>', text.splitlines()[0])))


class WalkthroughTest(walkthrough.WalkthroughBase):

    def test_outputs_have_the_documented_shape(self):
        outputs = self.walk()
        committed = sorted(os.listdir(walkthrough.DEFAULT_OUTPUT))
        self.assertEqual(committed, sorted(outputs))
        for name in committed:
            with open(os.path.join(walkthrough.DEFAULT_OUTPUT, name)) as f:
                documented = f.read()
            self.assertEqual(command(documented), command(outputs[name]),
                             name)
            self.assertEqual(shape(documented), shape(outputs[name]), name)


class GuideTest(testtools.TestCase):

    def test_the_guide_includes_every_output(self):
        with open(os.path.join(ROOT, 'doc', 'source', 'admin',
                               'walkthrough.rst')) as f:
            guide = f.read()
        names = os.listdir(walkthrough.DEFAULT_OUTPUT)
        self.assertGreater(len(names), 10)
        for name in names:
            self.assertIn('walkthrough/%s' % name, guide)
