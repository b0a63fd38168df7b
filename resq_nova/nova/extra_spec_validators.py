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
    # Any other resq: key reaches this one (Nova looks up exact names
    # first), which rejects it with the list of known keys.
    validators.append(ResQValidator(
        name='resq:{key}', description='Unknown resq: keys are rejected.',
        value={'type': str, 'description': 'none'},
        parameters=[{'name': 'key', 'pattern': r'[^:]+',
                     'description': 'a key that resq-nova does not know'}]))
    return validators
