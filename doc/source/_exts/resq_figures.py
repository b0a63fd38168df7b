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
"""The ``:num:`` role: a figure of ``figures.json`` in the text.

``:num:`evaluation/binding/mixed/resq_greedy/servers``` is the value at
that '/'-separated path of ``doc/source/figures.json``, which
``python -m resq_nova.evaluation.docfigures`` writes from a run of the
code. An optional suffix after ``|`` is a Python %-format, literal text
included: ``:num:`evaluation/binding/mixed/ratios/greedy_to_optimal|%.2fx```
renders ``1.07x``. Without one an integer is printed as is and a float
with ``%g``. An unknown path or a format the value does not take is an
error, which fails the build (``-W``).

The tests (``tests/unit/test_docfigures.py``) use this module's grammar
(:data:`ROLE_RE`) and :func:`render`, so it imports nothing of
resq-nova and docutils only in the role itself.
"""

import json
import os
import re

# A ``:num:`` role in reStructuredText source: its path and format.
ROLE_RE = re.compile(r':num:`([^`|]+)(?:\|([^`]*))?`')

FIGURES = 'figures.json'


class FigureError(Exception):
    """A ``:num:`` reference that cannot be rendered."""


def lookup(tree, path):
    """The value at ``path`` of ``tree``.

    :raises FigureError: naming the first missing key and what is there.
    """
    node = tree
    done = []
    for key in path.split('/'):
        if not isinstance(node, dict) or key not in node:
            have = (', '.join(sorted(node)) if isinstance(node, dict)
                    else 'a value, not a mapping')
            raise FigureError(
                'no figure %r in %s: no key %r under %r (there: %s); '
                'regenerate it with python -m resq_nova.evaluation.'
                'docfigures or fix the path' % (
                    path, FIGURES, key, '/'.join(done) or 'the top level',
                    have))
        node = node[key]
        done.append(key)
    return node


def render(tree, text):
    """The text of role content ``text`` (``path`` or ``path|format``).

    :raises FigureError: for an unknown path, a value that is not a
        number or a string, or a format it does not take.
    """
    path, _, fmt = text.strip().partition('|')
    value = lookup(tree, path.strip())
    if isinstance(value, (dict, list)) or value is None:
        raise FigureError('figure %r is %s, not a number; name a value '
                          'below it' % (path, 'null' if value is None
                                        else type(value).__name__))
    if not fmt:
        if isinstance(value, float):
            return '%g' % value
        return str(value)
    try:
        return fmt % value
    except (TypeError, ValueError) as exc:
        raise FigureError('figure %r (%r) does not take the format %r: %s'
                          % (path, value, fmt, exc))


def servers_cell(row):
    """A results table's cell: servers, and the share violated if any.

    ``29 (70%)``; ``L`` after the share when every violation is a latency
    one (``109 (26.5%L)``).
    """
    text = '%d' % row['servers']
    if row['violation_pct']:
        latency_only = not row['throughput_violation_pct']
        text += ' (%g%%%s)' % (row['violation_pct'],
                               'L' if latency_only else '')
    return text


def servers_table_lines(tree, setup, schemes, labels):
    """A ``list-table`` of servers (and violations) per set and scheme."""
    sets = lookup(tree, setup)
    lines = ['.. list-table::', '   :header-rows: 1', '',
             '   * - set']
    lines += ['     - %s' % label for label in labels]
    for set_name in ('sensitive', 'insensitive', 'mixed'):
        if set_name not in sets:
            continue
        lines.append('   * - %s' % set_name)
        for scheme in schemes:
            row = lookup(tree, '%s/%s/%s' % (setup, set_name, scheme))
            lines.append('     - %s' % servers_cell(row))
    return lines


def load(path):
    with open(path) as f:
        return json.load(f)


def num_role(name, rawtext, text, lineno, inliner, options=None,
             content=None):
    from docutils import nodes

    env = inliner.document.settings.env
    # A page that quotes a figure is rebuilt when the figures change.
    env.note_dependency(env.app.resq_figures_path)
    try:
        value = render(env.app.resq_figures, text)
    except FigureError as exc:
        msg = inliner.reporter.error(str(exc), line=lineno)
        return [inliner.problematic(rawtext, rawtext, msg)], [msg]
    return [nodes.Text(value)], []


def _servers_table_directive():
    from docutils.parsers.rst import directives
    from docutils.statemachine import StringList
    from sphinx.util.docutils import SphinxDirective

    class ServersTable(SphinxDirective):
        """``.. figures-servers-table:: evaluation/binding``

        Options ``:schemes:`` (comma-separated keys) and ``:labels:``
        (comma-separated column titles, as many).
        """

        required_arguments = 1
        option_spec = {'schemes': directives.unchanged_required,
                       'labels': directives.unchanged_required}

        def run(self):
            self.env.note_dependency(self.env.app.resq_figures_path)
            schemes = [s.strip() for s in self.options['schemes'].split(',')]
            labels = [s.strip() for s in self.options['labels'].split(',')]
            if len(schemes) != len(labels):
                raise self.error('figures-servers-table: %d schemes but %d '
                                 'labels; give one label per scheme'
                                 % (len(schemes), len(labels)))
            try:
                lines = servers_table_lines(self.env.app.resq_figures,
                                            self.arguments[0], schemes,
                                            labels)
            except (FigureError, KeyError, TypeError) as exc:
                raise self.error('figures-servers-table: %s' % exc)
            from docutils import nodes

            node = nodes.container()
            self.state.nested_parse(StringList(lines), self.content_offset,
                                    node)
            return node.children

    return ServersTable


def _load_figures(app):
    path = os.path.join(app.srcdir, FIGURES)
    app.resq_figures = load(path)
    app.resq_figures_path = path


def setup(app):
    app.connect('builder-inited', _load_figures)
    app.add_role('num', num_role)
    app.add_directive('figures-servers-table', _servers_table_directive())
    return {'version': '1.0', 'parallel_read_safe': True,
            'parallel_write_safe': True}
