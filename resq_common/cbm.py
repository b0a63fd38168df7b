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
"""Cache bit masks (CBMs): pure arithmetic, no I/O.

A CBM has one bit per LLC way. Intel CAT requires the set bits to be
contiguous and at least ``min_cbm_bits`` long, and within the platform's
``cbm_mask``. The kernel enforces this on real hardware; resq-nova checks
it itself so that a fake tree, or a kernel bug, never lets a bad mask by.
"""


class InvalidMask(ValueError):
    """A mask that CAT would refuse; the message says why."""


def parse(text):
    """Parse a hexadecimal mask as resctrl writes it (``"fffff"``)."""
    text = text.strip().lower()
    if text.startswith('0x'):
        text = text[2:]
    try:
        return int(text, 16)
    except ValueError:
        raise InvalidMask('%r is not a hexadecimal cache bit mask' % text)


def fmt(mask):
    """Format a mask the way resctrl reads it (lower-case hex, no 0x)."""
    return '%x' % mask


def bits(mask):
    return bin(mask).count('1')


def is_contiguous(mask):
    if mask <= 0:
        return False
    low = mask & -mask
    return (mask + low) & mask == 0


def make(first_way, ways):
    """A contiguous mask of ``ways`` ways starting at way ``first_way``."""
    if ways <= 0 or first_way < 0:
        raise InvalidMask('a mask needs at least one way from way 0 up; '
                          'got %d ways from way %d' % (ways, first_way))
    return ((1 << ways) - 1) << first_way


def validate(mask, cbm_mask, min_cbm_bits=1):
    """Check a mask against the platform's rules.

    :raises InvalidMask: naming the rule the mask breaks.
    """
    if mask & ~cbm_mask:
        raise InvalidMask('mask %s uses ways outside the cache (cbm_mask %s)'
                          % (fmt(mask), fmt(cbm_mask)))
    if not is_contiguous(mask):
        raise InvalidMask('mask %s is not contiguous; CAT needs the ways of '
                          'one class of service to be adjacent' % fmt(mask))
    if bits(mask) < min_cbm_bits:
        raise InvalidMask('mask %s has %d ways, fewer than min_cbm_bits %d'
                          % (fmt(mask), bits(mask), min_cbm_bits))
    return mask
