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
"""Validators of the ``resq:`` extra specs for nova-api.

Loaded by Nova through the ``nova.api.extra_spec_validators`` entry point;
Nova then rejects unknown keys in the ``resq`` namespace and bad values with
HTTP 400 (compute API 2.86 and later). Every message names the key and the
allowed values.
"""

from nova.api.validation.extra_specs import base

from resq_common import extra_specs
from resq_nova.nova import internals


class ResQValidator(base.ExtraSpecValidator):
    """Validates with :func:`resq_common.extra_specs.check_value`."""

    def validate(self, name, value):
        try:
            extra_specs.check_value(name, value)
        except extra_specs.InvalidResQSpec as exc:
            raise internals.validation_error('Validation failed; %s.' % exc)


#: The way amounts resq-nova checks: the unnamed request group's and
#: ``_LLC``'s, the group resq-admit and the docs use. Nova looks exact
#: names up before patterns, so these win over its own
#: ``resources{group}:CUSTOM_{resource}`` (any integer, negative or huge
#: ones included); a key with another group name is Nova's alone.
WAY_KEYS = ('resources:CUSTOM_LLC_WAY', 'resources_LLC:CUSTOM_LLC_WAY')


#: The memory bandwidth amounts resq-nova checks, as :data:`WAY_KEYS`.
BANDWIDTH_KEYS = ('resources:' + extra_specs.RC_MEM_BW,
                  'resources_LLC:' + extra_specs.RC_MEM_BW)


class AmountValidator(base.ExtraSpecValidator):
    """A resource amount: a whole number from 1 to ``most``."""

    #: What the amount is, and what to do about it, for the error.
    what = None
    most = None

    def validate(self, name, value):
        try:
            amount = int(str(value).strip())
        except ValueError:
            amount = None
        if amount is None or not 1 <= amount <= self.most:
            raise internals.validation_error(
                'Validation failed; %s=%s: %s' % (
                    name, value, self.what % self.most))


class WayAmountValidator(AmountValidator):
    """LLC ways: a count from 1 to the most ways a cache domain has."""

    what = ('LLC ways are a whole number from 1 to %d (the ways of one '
            'cache domain); ask for the ways the instance needs, or drop '
            'the key for no partition')
    most = int(extra_specs.SPECS['resq:min_ways'].maximum)


class BandwidthAmountValidator(AmountValidator):
    """Memory bandwidth: MiB/s from 1 to resq:mem_bw_mibps's maximum."""

    what = ('memory bandwidth is a whole number of MiB/s from 1 to %d; '
            'ask for what the instance needs (resq:mem_bw_mibps), or drop '
            'the key for no bandwidth limit')
    most = int(extra_specs.SPECS['resq:mem_bw_mibps'].maximum)


def _value(spec):
    if spec.kind == 'enum':
        return {'type': str, 'description': spec.allowed,
                'enum': list(spec.enum)}
    if spec.kind == 'int':
        return {'type': int, 'description': spec.allowed,
                'min': int(spec.minimum), 'max': int(spec.maximum)}
    return {'type': str, 'description': spec.allowed}


def register():
    validators = [ResQValidator(name=spec.key, description=spec.description,
                                value=_value(spec))
                  for spec in extra_specs.SPECS.values()]
    for cls, keys, description in (
            (WayAmountValidator, WAY_KEYS,
             'LLC ways the instance asks Placement for.'),
            (BandwidthAmountValidator, BANDWIDTH_KEYS,
             'Memory bandwidth (MiB/s) the instance asks Placement for.')):
        validators.extend(cls(
            name=key, description=description,
            value={'type': int,
                   'description': 'an integer from 1 to %d' % cls.most,
                   'min': 1, 'max': cls.most})
            for key in keys)
    # Any other resq: key reaches this one (Nova looks up exact names
    # first), which rejects it with the list of known keys.
    validators.append(ResQValidator(
        name='resq:{key}', description='Unknown resq: keys are rejected.',
        value={'type': str, 'description': 'none'},
        parameters=[{'name': 'key', 'pattern': r'[^:]+',
                     'description': 'a key that resq-nova does not know'}]))
    return validators
