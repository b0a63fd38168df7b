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


class WayAmountValidator(base.ExtraSpecValidator):
    """LLC ways: a count from 1 to the most ways a cache domain has."""

    def validate(self, name, value):
        most = int(extra_specs.SPECS['resq:min_ways'].maximum)
        try:
            ways = int(str(value).strip())
        except ValueError:
            ways = None
        if ways is None or not 1 <= ways <= most:
            raise internals.validation_error(
                'Validation failed; %s=%s: LLC ways are a whole number from '
                '1 to %d (the ways of one cache domain); ask for the ways '
                'the instance needs, or drop the key for no partition'
                % (name, value, most))


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
    most = int(extra_specs.SPECS['resq:min_ways'].maximum)
    validators.extend(WayAmountValidator(
        name=key, description='LLC ways the instance asks Placement for.',
        value={'type': int, 'description': 'an integer from 1 to %d' % most,
               'min': 1, 'max': most})
        for key in WAY_KEYS)
    # Any other resq: key reaches this one (Nova looks up exact names
    # first), which rejects it with the list of known keys.
    validators.append(ResQValidator(
        name='resq:{key}', description='Unknown resq: keys are rejected.',
        value={'type': str, 'description': 'none'},
        parameters=[{'name': 'key', 'pattern': r'[^:]+',
                     'description': 'a key that resq-nova does not know'}]))
    return validators
