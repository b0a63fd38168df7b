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

# Profiles, SLO files and the agent's state nest at most 4 levels.
MAX_DEPTH = 32


class TooDeep(ValueError):
    """A document nested deeper than the limit."""


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


def loads(text, max_depth=MAX_DEPTH):
    """``json.loads`` refusing documents nested deeper than ``max_depth``.

    :raises ValueError: (``json.JSONDecodeError`` or :class:`TooDeep`) with
        a one-line message.
    """
    found = depth(text)
    if found > max_depth:
        raise TooDeep('arrays and objects are nested %d levels deep, more '
                      'than the %d this document may have; it is not a '
                      'document this program wrote' % (found, max_depth))
    try:
        return json.loads(text)
    except RecursionError:
        raise TooDeep('arrays and objects are nested too deeply to decode')


def load(fp, max_depth=MAX_DEPTH):
    """:func:`loads` on an open text file."""
    return loads(fp.read(), max_depth)
