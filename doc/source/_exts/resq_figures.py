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

Figures that depend on the machine (seconds, MB, pass rates under a time
limit) come from recorded benchmark runs instead: ``python -m benchmarks
NAME --record`` writes ``doc/source/figures/bench-<name>.json``, and
every such file is in the tree under ``bench/<name>``:
``:num:`bench/milp/greedy_ms_per_term|%.1f ms``` and, for where it was
measured, ``:num:`bench/milp/machine/description``` and
``:num:`bench/milp/commit|%.10s```, and the command that ran it,
``:num:`bench/milp/command``` (set as code). A key missing in a record
fails the build the same way.

A paper's own figure, cited as the paper's, is marked with the
``:paper:`` role (``ResQ reports :paper:`14.7%```), which renders its
text as is and tells the tests it is not one of ours.

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

# The recorded benchmark runs, relative to the source directory, and the
# key of the tree they are under.
RECORDS = 'figures'
RECORD_PREFIX = 'bench-'
BENCH = 'bench'

# What every record carries besides the benchmark's own figures.
RECORD_KEYS = ('recorded_at', 'commit', 'machine')


class FigureError(Exception):
    """A ``:num:`` reference that cannot be rendered."""


def lookup(tree, path):
    """The value at ``path`` of ``tree``; a number indexes a list.

    :raises FigureError: naming the first missing key and what is there.
    """
    node = tree
    done = []
    for key in path.split('/'):
        if isinstance(node, list) and key.isdigit() and int(key) < len(
                node):
            # A list's item by its index (a benchmark's rows).
            node = node[int(key)]
            done.append(key)
            continue
        if not isinstance(node, dict) or key not in node:
            if isinstance(node, dict):
                have = ', '.join(sorted(node))
            elif isinstance(node, list):
                have = 'a list of %d, indexed from 0' % len(node)
            else:
                have = 'a value, not a mapping'
            raise FigureError(
                'no figure %r: no key %r under %r (there: %s); %s or fix '
                'the path' % (
                    path, key, '/'.join(done) or 'the top level', have,
                    _how_to_make(path)))
        node = node[key]
        done.append(key)
    return node


def _how_to_make(path):
    """How to write the figure at ``path``."""
    parts = path.split('/')
    if parts[0] == BENCH and len(parts) > 1:
        return ('record it with python -m benchmarks NAME --record (%s/'
                '%s%s.json, see benchmarks/__main__.py)' % (
                    RECORDS, RECORD_PREFIX, parts[1]))
    return ('regenerate %s with python -m resq_nova.evaluation.docfigures'
            % FIGURES)


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


def rows_table_lines(tree, path, columns, labels):
    """A ``list-table`` of the list of rows at ``path``.

    ``columns`` are role texts relative to a row (``key`` or
    ``key|format``), one per label; a row per item of the list.

    :raises FigureError: when ``path`` is not a list of mappings, or a
        cell cannot be rendered.
    """
    rows = lookup(tree, path)
    if not isinstance(rows, list) or not rows:
        raise FigureError('figure %r is not a list of rows; name a list '
                          'of mappings (a benchmark\'s "rows")' % path)
    lines = ['.. list-table::', '   :header-rows: 1', '']
    lines += ['   %s %s' % ('*' if i == 0 else ' ', '- ' + label)
              for i, label in enumerate(labels)]
    for index in range(len(rows)):
        for i, column in enumerate(columns):
            cell = render(tree, '%s/%d/%s' % (path, index, column))
            lines.append('   %s - %s' % ('*' if i == 0 else ' ', cell))
    return lines


def is_command(value):
    """Whether a figure is a command line (a record's ``command``)."""
    return value.startswith('python -m ')


def load(path):
    with open(path) as f:
        return json.load(f)


def record_paths(srcdir):
    """The recorded benchmark runs under ``srcdir``, sorted."""
    directory = os.path.join(srcdir, RECORDS)
    if not os.path.isdir(directory):
        return []
    return sorted(os.path.join(directory, n) for n in os.listdir(directory)
                  if n.startswith(RECORD_PREFIX) and n.endswith('.json'))


def load_tree(srcdir):
    """``figures.json`` with every record under ``bench/<name>``.

    :raises FigureError: when ``figures.json`` has a ``bench`` key of its
        own (the records' place).
    """
    tree = load(os.path.join(srcdir, FIGURES))
    if BENCH in tree:
        raise FigureError('%s has a top-level %r key, where the recorded '
                          'benchmark runs go; rename that source'
                          % (FIGURES, BENCH))
    records = tree[BENCH] = {}
    for path in record_paths(srcdir):
        name = os.path.basename(path)[len(RECORD_PREFIX):-len('.json')]
        records[name] = load(path)
    return tree


def num_role(name, rawtext, text, lineno, inliner, options=None,
             content=None):
    from docutils import nodes

    env = inliner.document.settings.env
    # A page that quotes a figure is rebuilt when the figures change.
    for path in env.app.resq_figures_paths:
        env.note_dependency(path)
    try:
        value = render(env.app.resq_figures, text)
    except FigureError as exc:
        msg = inliner.reporter.error(str(exc), line=lineno)
        return [inliner.problematic(rawtext, rawtext, msg)], [msg]
    if is_command(value):
        # Set as code, as typed (no "--" made a dash).
        return [nodes.literal(value, value)], []
    return [nodes.Text(value)], []


def paper_role(name, rawtext, text, lineno, inliner, options=None,
               content=None):
    """``:paper:`14.7%``` is a figure of a paper, cited as the paper's.

    It renders as is; it marks the figure as not ours, so that the test
    that finds hand-copied result figures in the docs passes it over.
    """
    from docutils import nodes

    return [nodes.Text(text)], []


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
            for path in self.env.app.resq_figures_paths:
                self.env.note_dependency(path)
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


def _rows_table_directive():
    from docutils.parsers.rst import directives
    from docutils.statemachine import StringList
    from sphinx.util.docutils import SphinxDirective

    class RowsTable(SphinxDirective):
        """``.. figures-rows-table:: bench/optimizer_gap/rows``

        Options ``:columns:`` (comma-separated keys of a row, each with
        an optional ``|format``) and ``:labels:`` (as many titles).
        """

        required_arguments = 1
        option_spec = {'columns': directives.unchanged_required,
                       'labels': directives.unchanged_required}

        def run(self):
            for path in self.env.app.resq_figures_paths:
                self.env.note_dependency(path)
            columns = [c.strip() for c in self.options['columns'].split(',')]
            labels = [c.strip() for c in self.options['labels'].split(',')]
            if len(columns) != len(labels):
                raise self.error('figures-rows-table: %d columns but %d '
                                 'labels; give one label per column'
                                 % (len(columns), len(labels)))
            try:
                lines = rows_table_lines(self.env.app.resq_figures,
                                         self.arguments[0], columns,
                                         labels)
            except FigureError as exc:
                raise self.error('figures-rows-table: %s' % exc)
            from docutils import nodes

            node = nodes.container()
            self.state.nested_parse(StringList(lines), self.content_offset,
                                    node)
            return node.children

    return RowsTable


def _load_figures(app):
    app.resq_figures = load_tree(app.srcdir)
    app.resq_figures_paths = ([os.path.join(app.srcdir, FIGURES)]
                              + record_paths(app.srcdir))


def setup(app):
    app.connect('builder-inited', _load_figures)
    app.add_role('num', num_role)
    app.add_role('paper', paper_role)
    app.add_directive('figures-servers-table', _servers_table_directive())
    app.add_directive('figures-rows-table', _rows_table_directive())
    return {'version': '1.0', 'parallel_read_safe': True,
            'parallel_write_safe': True}
