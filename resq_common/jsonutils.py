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
"""JSON from files people hand us: bounded nesting, errors as ValueError.

Python's decoder recurses once per nesting level, so a document nested a
few thousand levels deep ends in a ``RecursionError`` (a traceback) instead
of a message; and nothing resq-nova reads nests more than a handful of
levels. :func:`loads` refuses such documents before decoding them.
"""

import json
import math

# Profiles, SLO files and the agent's state nest at most 4 levels.
MAX_DEPTH = 32
# The largest document read by default (a snapshot of 10,000 hosts is about
# 10 MB); callers that read small documents pass their own cap.
MAX_BYTES = 64 * 1024 * 1024


class TooDeep(ValueError):
    """A document nested deeper than the limit."""


class TooLarge(ValueError):
    """A document larger than the limit."""


def finite_float(text):
    """A JSON number as a float, refusing what overflows to infinity."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError('%s is not a finite number (too large for a '
                         'double)' % text[:40])
    return value


def _no_constant(name):
    raise ValueError('%s is not a finite number (JSON has no NaN or '
                     'Infinity; write a finite number)' % name)


def depth(text):
    """How deeply arrays and objects nest in JSON ``text``.

    A linear scan that skips strings; it does not validate the syntax.
    """
    level = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == '\\':
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in '[{':
            level += 1
            if level > deepest:
                deepest = level
        elif ch in ']}':
            level -= 1
    return deepest


def loads(text, max_depth=MAX_DEPTH, max_bytes=MAX_BYTES):
    """``json.loads`` for documents people hand us.

    Refuses documents nested deeper than ``max_depth``, larger than
    ``max_bytes`` characters, or holding NaN or Infinity.

    :raises ValueError: (``json.JSONDecodeError`` or :class:`TooDeep`) with
        a one-line message.
    """
    if len(text) > max_bytes:
        raise TooLarge('the document has %d characters, more than the %d '
                       'it may have' % (len(text), max_bytes))
    found = depth(text)
    if found > max_depth:
        raise TooDeep('arrays and objects are nested %d levels deep, more '
                      'than the %d this document may have; it is not a '
                      'document this program wrote' % (found, max_depth))
    try:
        return json.loads(text, parse_constant=_no_constant,
                          parse_float=finite_float)
    except RecursionError:
        raise TooDeep('arrays and objects are nested too deeply to decode')


def load(fp, max_depth=MAX_DEPTH, max_bytes=MAX_BYTES):
    """:func:`loads` on an open text file, reading at most the cap."""
    return loads(fp.read(max_bytes + 1), max_depth, max_bytes)


def read_text(path, max_bytes=MAX_BYTES):
    """The text of file ``path``, refused past ``max_bytes`` characters.

    :raises TooLarge: (a ValueError) without reading the rest.
    :raises OSError: the file cannot be read.
    """
    with open(path, encoding='utf-8') as f:
        text = f.read(max_bytes + 1)
    if len(text) > max_bytes:
        raise TooLarge('%s is larger than the %d characters it may have'
                       % (path, max_bytes))
    return text
