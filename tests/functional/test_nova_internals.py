"""The Nova that is installed still has what resq-nova relies on.

Every Nova internal the plugins use goes through
:mod:`resq_nova.nova.internals`; these tests check each one against the
installed Nova (the current release in the ``functional`` tox environment,
the previous one in ``nova-previous``): that it exists, that the call the
wrapper makes still binds to its signature, that it still answers as the
wrapper says, and that the object fields and HostState attributes the
plugins read are still there. The public plugin interfaces the plugins
subclass are checked the same way. A failure names the Nova symbol and
what changed.
"""

import dataclasses
import inspect
import uuid

from nova.api.validation.extra_specs import base as es_base
from nova.api.validation.extra_specs import validators as es_validators
from nova import context
from nova import exception
from nova import objects
from nova.scheduler.client import report
from nova.scheduler import filters as nova_filters
from nova.scheduler import host_manager
from nova.scheduler import utils
from nova.scheduler import weights as nova_weights
from nova.virt import hardware
from oslotest import base

from resq_nova.nova import extra_spec_validators
from resq_nova.nova import internals

objects.register_all()

REQUIRED = inspect.Parameter.empty
HOW_TO_FIX = ('; adapt resq_nova/nova/internals.py and list the change in '
              'doc/source/install/support.rst')


class SignatureMixin:

    def assertCallBinds(self, symbol, func, args, kwargs, defaults=()):
        """``func(*args, **kwargs)`` binds, and ``defaults`` still default.

        :param defaults: ``{parameter: default}`` for the parameters the
            wrapper leaves out, so relies on their defaults.
        """
        try:
            sig = inspect.signature(func)
        except (TypeError, ValueError) as exc:
            self.fail('%s has no signature any more (%s)%s'
                      % (symbol, exc, HOW_TO_FIX))
        try:
            sig.bind(*args, **kwargs)
        except TypeError as exc:
            self.fail('Nova changed %s%s: resq-nova calls it with '
                      'arguments %s and keywords %s, which no longer bind '
                      '(%s)%s' % (symbol, sig, len(args), sorted(kwargs),
                                  exc, HOW_TO_FIX))
        for name, default in dict(defaults).items():
            param = sig.parameters.get(name)
            if param is None or param.default != default:
                self.fail('Nova changed %s%s: resq-nova relies on parameter '
                          '%r defaulting to %r%s' % (symbol, sig, name,
                                                     default, HOW_TO_FIX))

    def assertHasAttributes(self, symbol, obj, names):
        missing = [n for n in names if not hasattr(obj, n)]
        if missing:
            self.fail('Nova changed %s: resq-nova uses %s, which it no '
                      'longer has%s' % (symbol, ', '.join(missing),
                                        HOW_TO_FIX))


def host_topology(cells=2, cores=4, pinned=()):
    return objects.NUMATopology(cells=[objects.NUMACell(
        id=c, cpuset=set(), pcpuset=set(range(c * cores, (c + 1) * cores)),
        memory=4096, memory_usage=0, pinned_cpus=set(pinned) if c == 0
        else set(), siblings=[{i} for i in range(c * cores, (c + 1) * cores)],
        mempages=[], network_metadata=objects.NetworkMetadata(
            physnets=set(), tunneled=False), socket=c)
        for c in range(cells)])


def instance_topology(vcpus):
    return objects.InstanceNUMATopology(cells=[objects.InstanceNUMACell(
        id=0, cpuset=set(), pcpuset=set(range(vcpus)), memory=512,
        cpu_policy='dedicated')])


class WrappedInternalsTest(SignatureMixin, base.BaseTestCase):
    """Each wrapper of resq_nova.nova.internals, on the installed Nova."""

    def test_numa_fit_instance_to_host(self):
        symbol = 'nova.virt.hardware.numa_fit_instance_to_host'
        self.assertCallBinds(
            symbol, hardware.numa_fit_instance_to_host, ('host', 'inst'),
            {'provider_mapping': None, 'limits': None, 'pci_requests': None,
             'pci_stats': None})
        fitted = internals.numa_fit(host_topology(pinned={0, 1}),
                                    instance_topology(3))
        self.assertIsNotNone(fitted, '%s no longer fits 3 dedicated cores '
                             'on a host with 4 free in cell 1' % symbol)
        self.assertEqual([1], [c.id for c in fitted.cells],
                         '%s no longer returns the cell it pinned' % symbol)
        self.assertEqual(3, len(fitted.cells[0].cpu_pinning),
                         '%s no longer writes the CPU pinning' % symbol)
        self.assertIsNone(
            internals.numa_fit(host_topology(), instance_topology(5)),
            '%s no longer answers None when no cell fits' % symbol)

    def test_request_is_rebuild(self):
        symbol = 'nova.scheduler.utils.request_is_rebuild'
        self.assertCallBinds(symbol, utils.request_is_rebuild, ('spec',), {})
        rebuild = objects.RequestSpec(
            scheduler_hints={'_nova_check_type': ['rebuild']})
        boot = objects.RequestSpec(scheduler_hints={})
        self.assertTrue(internals.request_is_rebuild(rebuild),
                        '%s no longer reads the _nova_check_type hint'
                        % symbol)
        self.assertFalse(internals.request_is_rebuild(boot), symbol)

    def test_get_weight_multiplier(self):
        symbol = 'nova.scheduler.utils.get_weight_multiplier'
        self.assertCallBinds(symbol, utils.get_weight_multiplier,
                             ('host_state', 'key', 1.0), {})
        hs = host_manager.HostState('h', 'h', None)
        self.assertEqual(1.5, internals.weight_multiplier(hs, 'k', 1.5),
                         '%s no longer returns the default without '
                         'aggregate metadata' % symbol)
        hs.aggregates = [objects.Aggregate(metadata={'k': '3'}),
                         objects.Aggregate(metadata={'k': '2'})]
        self.assertEqual(2.0, internals.weight_multiplier(hs, 'k', 1.5),
                         '%s no longer takes the smallest aggregate value'
                         % symbol)

    def test_report_client_singleton(self):
        symbol = 'nova.scheduler.client.report.report_client_singleton'
        self.assertCallBinds(symbol, report.report_client_singleton, (), {})
        # The client is built from nova.conf's [placement] credentials,
        # which this test has not got: check the method the weigher calls.
        self.assertCallBinds(
            'nova.scheduler.client.report.SchedulerReportClient.get',
            report.SchedulerReportClient.get, ('self', '/url'),
            {'version': '1.33'}, defaults={'global_request_id': None})

    def test_get_allocation_candidates(self):
        # keep_allocation_candidates wraps it; nova_provider_summaries
        # matches its answer to the RequestSpec's context.
        symbol = ('nova.scheduler.client.report.SchedulerReportClient.'
                  'get_allocation_candidates')
        method = report.SchedulerReportClient.get_allocation_candidates
        self.assertCallBinds(symbol, method, ('self', 'ctx', 'resources'),
                             {})
        self.assertTrue(internals.keep_allocation_candidates(),
                        '%s: the weigher cannot wrap it%s'
                        % (symbol, HOW_TO_FIX))

        class Resources:
            def to_querystring(self):
                return 'resources=VCPU:1'

        class Response:
            status_code = 200

            def json(self):
                return {'allocation_requests': ['req'],
                        'provider_summaries': {'rp': {}}}

        client = object.__new__(report.SchedulerReportClient)
        client.get = lambda url, **kwargs: Response()
        ctx = context.RequestContext('user', 'project', is_admin=False)
        result = report.SchedulerReportClient.get_allocation_candidates(
            client, ctx, Resources())
        self.assertEqual((['req'], {'rp': {}}), result[:2],
                         '%s no longer answers (allocation_requests, '
                         'provider_summaries, version)%s'
                         % (symbol, HOW_TO_FIX))
        spec = objects.RequestSpec(context=ctx)
        self.assertIs(ctx, getattr(spec, '_context', None),
                      'nova.objects.RequestSpec no longer keeps its context '
                      'in _context%s' % HOW_TO_FIX)
        self.assertEqual({'rp': {}}, internals.nova_provider_summaries(spec))

    def test_validation_error(self):
        symbol = 'nova.exception.ValidationError'
        exc = internals.validation_error('Validation failed; bad.')
        self.assertIsInstance(exc, exception.ValidationError)
        self.assertIsInstance(exc, exception.Invalid,
                              '%s no longer is a nova.exception.Invalid, '
                              'which nova-api answers with 400' % symbol)
        self.assertEqual(400, exc.code, symbol)
        self.assertEqual('Validation failed; bad.', str(exc),
                         '%s no longer carries the message as given'
                         % symbol)


class ObjectFieldsTest(SignatureMixin, base.BaseTestCase):
    """The fields and attributes the plugins read from Nova's objects."""

    def test_versioned_object_fields(self):
        for name, fields in sorted(internals.OBJECT_FIELDS.items()):
            cls = getattr(objects, name, None)
            if cls is None:
                self.fail('Nova no longer has nova.objects.%s%s'
                          % (name, HOW_TO_FIX))
            missing = sorted(set(fields) - set(cls.fields))
            self.assertEqual([], missing,
                             'Nova changed nova.objects.%s: resq-nova reads '
                             'fields %s, which it no longer has%s'
                             % (name, missing, HOW_TO_FIX))

    def test_host_state_attributes(self):
        hs = host_manager.HostState('h', 'h', str(uuid.uuid4()))
        self.assertHasAttributes('nova.scheduler.host_manager.HostState', hs,
                                 internals.HOST_STATE_ATTRIBUTES)


class PublicInterfacesTest(SignatureMixin, base.BaseTestCase):
    """The public plugin interfaces, as resq-nova subclasses them."""

    def test_the_listed_public_names_exist(self):
        modules = {'nova.scheduler.filters': nova_filters,
                   'nova.scheduler.weights': nova_weights,
                   'nova.api.validation.extra_specs.base': es_base}
        self.assertEqual(sorted(modules),
                         sorted(internals.PUBLIC_INTERFACES))
        for path, names in internals.PUBLIC_INTERFACES.items():
            self.assertHasAttributes(path, modules[path], names)

    def test_base_host_filter(self):
        cls = nova_filters.BaseHostFilter
        symbol = 'nova.scheduler.filters.BaseHostFilter'
        self.assertHasAttributes(symbol, cls, ('RUN_ON_REBUILD',))
        self.assertCallBinds(symbol + '.filter_all', cls.filter_all,
                             ('self', [], 'spec'), {})
        self.assertCallBinds(symbol + '.host_passes', cls.host_passes,
                             ('self', 'host', 'spec'), {})

    def test_base_host_weigher(self):
        cls = nova_weights.BaseHostWeigher
        symbol = 'nova.scheduler.weights.BaseHostWeigher'
        self.assertCallBinds(symbol + '.weight_multiplier',
                             cls.weight_multiplier, ('self', 'host'), {})
        self.assertCallBinds(symbol + '.weigh_objects', cls.weigh_objects,
                             ('self', [], 'spec'), {})
        self.assertCallBinds(symbol + '._weigh_object', cls._weigh_object,
                             ('self', 'host', 'spec'), {})

    def test_extra_spec_validator(self):
        symbol = 'nova.api.validation.extra_specs.base.ExtraSpecValidator'
        names = {f.name for f in dataclasses.fields(
            es_base.ExtraSpecValidator)}
        missing = sorted({'name', 'description', 'value', 'parameters'}
                         - names)
        self.assertEqual([], missing, 'Nova changed %s: fields %s are gone%s'
                         % (symbol, missing, HOW_TO_FIX))
        self.assertCallBinds(symbol + '.validate',
                             es_base.ExtraSpecValidator.validate,
                             ('self', 'resq:slo', 'reserved'), {})

    def test_validators_load_through_the_entry_point(self):
        # Nova's own loader (run when its module is imported): the resq
        # keys are registered, and a bad value is refused with the
        # ValidationError the wrapper makes.
        self.assertIn('resq:slo', es_validators.VALIDATORS,
                      'nova.api.validation.extra_specs.validators no longer '
                      'loads the nova.api.extra_spec_validators entry point')
        err = self.assertRaises(
            exception.ValidationError, es_validators.validate,
            'resq:slo', 'sometimes')
        self.assertIn('resq:slo', str(err))
        self.assertIsInstance(extra_spec_validators.register()[0],
                              es_base.ExtraSpecValidator)


class CoverageTest(SignatureMixin, base.BaseTestCase):
    """Every wrapper is checked here, and the checks can fail."""

    def test_every_wrapper_has_a_test(self):
        wrappers = {name for name, obj in vars(internals).items()
                    if inspect.isfunction(obj) and not name.startswith('_')
                    and obj.__module__ == internals.__name__}
        checked = {'numa_fit', 'request_is_rebuild', 'weight_multiplier',
                   'placement_client', 'validation_error',
                   'keep_allocation_candidates', 'nova_provider_summaries'}
        self.assertEqual(set(), wrappers - checked,
                         'add a test of each new wrapper of '
                         'resq_nova.nova.internals to WrappedInternalsTest')
        self.assertEqual(set(), checked - wrappers)

    def test_a_changed_signature_fails_naming_the_symbol(self):
        def numa_fit_instance_to_host(host_topology, instance_topology,
                                      limits=None):
            pass

        err = self.assertRaises(
            AssertionError, self.assertCallBinds, 'nova.virt.hardware.x',
            numa_fit_instance_to_host, ('h', 'i'), {'provider_mapping': None})
        self.assertIn('Nova changed nova.virt.hardware.x(', str(err))
        self.assertIn("'provider_mapping'", str(err))
        self.assertIn('resq_nova/nova/internals.py', str(err))

    def test_a_changed_default_fails(self):
        def get(self, url, version=None, global_request_id='x'):
            pass

        err = self.assertRaises(
            AssertionError, self.assertCallBinds, 'Client.get', get,
            ('self', '/'), {}, defaults={'global_request_id': None})
        self.assertIn("'global_request_id' defaulting to None", str(err))

    def test_a_missing_attribute_fails(self):
        err = self.assertRaises(
            AssertionError, self.assertHasAttributes, 'HostState', object(),
            ('uuid', 'allocation_candidates'))
        self.assertIn('Nova changed HostState', str(err))
        self.assertIn('uuid, allocation_candidates', str(err))


class WayAmountTest(base.BaseTestCase):
    """Nova's own validation, with resq-nova's validators loaded."""

    def test_absurd_way_amounts_are_refused_naming_the_key(self):
        for key in extra_spec_validators.WAY_KEYS:
            es_validators.validate(key, '4')
            for bad in ('-2', '0', '100000000000', 'four'):
                exc = self.assertRaises(exception.ValidationError,
                                        es_validators.validate, key, bad)
                self.assertIn('%s=%s: LLC ways are a whole number from 1 '
                              'to 1024' % (key, bad), str(exc))
        # Another group name is Nova's: any integer.
        es_validators.validate('resources_X:CUSTOM_LLC_WAY', '4')

    def test_absurd_bandwidth_amounts_are_refused_naming_the_key(self):
        for key in extra_spec_validators.BANDWIDTH_KEYS:
            es_validators.validate(key, '2000')
            for bad in ('-2', '0', '100000000000', 'lots'):
                exc = self.assertRaises(exception.ValidationError,
                                        es_validators.validate, key, bad)
                self.assertIn('%s=%s: memory bandwidth is a whole number '
                              'of MiB/s from 1 to 100000000' % (key, bad),
                              str(exc))
