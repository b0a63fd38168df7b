"""The Heat templates, loaded and checked by openstack-heat's own code.

Every template in ``etc/heat/`` and those ``resq_nova.deploy.heat`` writes go
through Heat's template parser, its ``Template`` class, a ``Stack`` (so
parameters, functions and ``OS::project_id`` resolve) and Heat's resource
plugins with their property schemas (``OS::Nova::Flavor``,
``OS::Nova::Server``, Neutron's): an unknown resource type or property or a
value of the wrong type fails. Heat runs in a process of its own
(``tests/fixtures/heat_check.py``): its options clash with Nova's on the
global configuration. Only the look-ups that need a cloud (does this image,
network or project exist) are not made.
"""

import glob
import json
import os
import subprocess
import sys

import yaml

from resq_common import extra_specs
from resq_nova.admission.batch import planner
from resq_nova.admission import greedy
from resq_nova.admission import ondemand
from resq_nova.admission import reserved as admission
from resq_nova.deploy import flavors
from resq_nova.deploy import heat
from resq_profiler import nfmodel
from resq_profiler import profiler
from tests import base
from tests.fixtures import heat_check
from tests.unit.resq_nova.admission import test_greedy
from tests.unit.resq_nova.admission import test_reserved as test_admission

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
TEMPLATES = sorted(glob.glob(os.path.join(REPO, 'etc', 'heat', '*.yaml')))


def heat_load(*texts, params=None):
    """Heat's verdict on each template (see ``heat_check``).

    :param params: parameter values given to every template, as
        ``openstack stack create --parameter`` would.
    """
    return _heat_check([(text, params) for text in texts])


def _heat_check(requests):
    """Heat's verdict on each ``(template text, parameters)``, in one run."""
    requests = [{'text': text,
                 'params': dict(_required_params(text), **(params or {}))}
                for text, params in requests]
    proc = subprocess.run([sys.executable, heat_check.__file__],
                          input=json.dumps(requests), capture_output=True,
                          text=True, cwd=REPO)
    if proc.returncode:
        raise AssertionError('heat_check failed (%d): %s'
                             % (proc.returncode, proc.stderr[-3000:]))
    return json.loads(proc.stdout)


def _required_params(text):
    """A value for every parameter without a default."""
    params = yaml.safe_load(text).get('parameters') or {}
    return {name: 'net-%s' % name for name, p in params.items()
            if 'default' not in p}


def _plan():
    term = greedy.SLOTerm('fw-a', test_greedy.make_profile(), 10.0, 25.0)
    return admission.make_plan(term, test_admission.body(
        test_admission.node('h1'), test_admission.domain('d1', 'h1')),
        flavors.FlavorOptions())


def _read(path):
    with open(path) as f:
        return f.read()


# The cache-domain traits the templates in etc/heat/ take as parameters,
# and their defaults: the model driver's 20-way L3 of 2304 KiB ways.
TRAIT_PARAMS = {'llc_ways_trait': 'CUSTOM_RESQ_LLC_WAYS_20',
                'llc_way_kib_trait': 'CUSTOM_RESQ_LLC_WAY_KIB_2304'}


def _llc_traits(specs):
    """The platform traits an LLC request group requires."""
    return sorted(k[len('trait%s:' % flavors.LLC_GROUP):]
                  for k, v in specs.items()
                  if v == 'required' and k.startswith(
                      'trait%s:CUSTOM_RESQ_LLC_WAY' % flavors.LLC_GROUP))


class HeatTemplatesTest(base.TestCase):

    def check(self, answer, where):
        """Heat accepted it, and every flavor is a private ResQ flavor."""
        self.assertTrue(answer['ok'], '%s: %s' % (where, answer.get('error')))
        res = answer['resources']
        flavors_seen = 0
        for name, r in res.items():
            if r['type'] != 'OS::Nova::Flavor':
                continue
            flavors_seen += 1
            props = r['properties']
            self.assertIs(False, props['is_public'], (where, name))
            # The stack's project, resolved by Heat from OS::project_id.
            self.assertEqual([heat_check.PROJECT], props['tenants'],
                             (where, name))
            specs = props['extra_specs']
            # What nova-api's validator accepts, with an LLC request group.
            slo = extra_specs.parse(specs, props['vcpus'])
            self.assertEqual(extra_specs.RESERVED, slo.slo)
            self.assertEqual('required', specs['trait%s:%s' % (
                flavors.LLC_GROUP, extra_specs.TRAIT_CAT_L3)])
            self.assertGreaterEqual(int(specs['resources%s:%s' % (
                flavors.LLC_GROUP, extra_specs.RC_LLC_WAY)]), 1)
        return res, flavors_seen

    def test_every_template_in_etc_heat(self):
        self.assertEqual(['resq-service-chain.yaml', 'resq-slo-term.yaml'],
                         [os.path.basename(p) for p in TEMPLATES])
        texts = [_read(p) for p in TEMPLATES]
        for path, text, answer in zip(TEMPLATES, texts, heat_load(*texts)):
            res, seen = self.check(answer, path)
            self.assertGreater(seen, 0, path)
            servers = [n for n, r in res.items()
                       if r['type'] == 'OS::Nova::Server']
            self.assertTrue(servers, path)
            # Every server boots with one of the template's ResQ flavors.
            raw = yaml.safe_load(text)['resources']
            for name in servers:
                ref = raw[name]['properties']['flavor']['get_resource']
                self.assertEqual('OS::Nova::Flavor', res[ref]['type'],
                                 (path, name))

    def test_cache_domain_traits_are_parameters(self):
        texts = [_read(p) for p in TEMPLATES]
        for path, text in zip(TEMPLATES, texts):
            params = yaml.safe_load(text)['parameters']
            for name, default in TRAIT_PARAMS.items():
                # Today's platform by default, and the description says
                # where an operator finds the values of another.
                self.assertEqual(default, params[name]['default'],
                                 (path, name))
                self.assertIn('allowed_pattern',
                              params[name]['constraints'][0], (path, name))
            self.assertIn('openstack resq host list',
                          params['llc_ways_trait']['description'], path)
            self.assertIn('openstack resource provider trait list',
                          params['llc_ways_trait']['description'], path)
            # No flavor names a cache shape itself.
            self.assertNotIn('trait_LLC:CUSTOM_RESQ_LLC_WAY', text, path)
        other = {'llc_ways_trait': 'CUSTOM_RESQ_LLC_WAYS_11',
                 'llc_way_kib_trait': 'CUSTOM_RESQ_LLC_WAY_KIB_1408'}
        # Not a cache-domain trait of the parameter's kind.
        bad = ({'llc_ways_trait': 'CUSTOM_RESQ_LLC_WAY_KIB_1408'},
               {'llc_ways_trait': 'CUSTOM_RESQ_LLC_WAYS_'},
               {'llc_way_kib_trait': 'HW_CPU_X86_AVX2'},
               {'llc_way_kib_trait': 'CUSTOM_RESQ_LLC_WAY_KIB_1408 '})
        cases = [(None, TRAIT_PARAMS), (other, other)] + [
            (params, None) for params in bad]
        # One Heat run for all of them: (case, template) in order.
        answers = iter(_heat_check([(text, params) for params, _ in cases
                                    for text in texts]))
        for params, want in cases:
            for path in TEMPLATES:
                ans = next(answers)
                if want is None:
                    # Heat refuses it, naming the parameter.
                    self.assertFalse(ans['ok'], (path, params))
                    self.assertIn(list(params)[0], ans['error'],
                                  (path, params))
                    continue
                res, seen = self.check(ans, path)
                self.assertGreater(seen, 0, path)
                for name, r in res.items():
                    if r['type'] != 'OS::Nova::Flavor':
                        continue
                    # Heat resolved the parameters into the flavor's
                    # extra specs, next to the rest of the LLC group.
                    specs = r['properties']['extra_specs']
                    self.assertEqual(sorted(want.values()),
                                     _llc_traits(specs), (path, name))
                    self.assertEqual('required', specs['trait%s:%s' % (
                        flavors.LLC_GROUP, extra_specs.TRAIT_CAT_L3)])
                    self.assertEqual('reserved', specs['resq:slo'])

    def test_service_chain_specs_are_resq_admits(self):
        text = _read(os.path.join(REPO, 'etc', 'heat',
                                  'resq-service-chain.yaml'))
        (answer,) = heat_load(text)
        res, seen = self.check(answer, 'resq-service-chain.yaml')
        self.assertEqual(3, seen)
        for term, nf in (('fw', 'Firewall'), ('nat', 'MazuNAT'),
                         ('ids', 'Snort')):
            props = res['flavor_resq_%s_1w' % term]['properties']
            specs = props['extra_specs']
            prof = profiler.run(self.conf, nf, nfmodel.Traffic(64, 100000),
                                profile_id=specs['resq:profile'])
            slo = greedy.SLOTerm(term, prof,
                                 float(specs['resq:throughput_mpps']),
                                 float(specs['resq:latency_p95_us']))
            plan = admission.make_plan(slo, test_admission.body(
                test_admission.node('h1'),
                test_admission.domain('d1', 'h1', ways=17)),
                flavors.FlavorOptions(1, 2048, 10, 'large'))
            # One instance per NF, with the flavor resq-admit would make.
            self.assertEqual(1, len(plan.instances), term)
            (wanted,) = plan.flavors
            self.assertEqual(wanted.name, props['name'])
            self.assertEqual([], flavors.differences(
                {'vcpus': props['vcpus'], 'ram': props['ram'],
                 'disk': props['disk'], 'extra_specs': specs}, wanted))
        # Traffic crosses the NFs in order: each NF's egress port is on the
        # network of the next NF's ingress port.
        tmpl = yaml.safe_load(text)['resources']

        def net(port):
            return tmpl[port]['properties']['network']
        ports = [[n['port']['get_resource'] for n in
                  tmpl[nf]['properties']['networks']]
                 for nf in ('firewall', 'nat', 'ids')]
        self.assertEqual({'get_param': 'ingress_network'}, net(ports[0][0]))
        self.assertEqual(net(ports[0][1]), net(ports[1][0]))
        self.assertEqual(net(ports[1][1]), net(ports[2][0]))
        self.assertNotEqual(net(ports[0][1]), net(ports[1][1]))
        self.assertEqual({'get_param': 'egress_network'}, net(ports[2][1]))

    def test_templates_written_by_resq_admit(self):
        plan = _plan()
        kws = ({'image': 'cirros'},
               {'image': 'cirros', 'network': 'net1',
                'existing': {'resq.fw-a.2w'}})
        answers = heat_load(*[heat.dump(heat.template(plan, **kw))
                              for kw in kws])
        for kw, answer in zip(kws, answers):
            res, seen = self.check(answer, kw)
            self.assertEqual(2 - len(kw.get('existing', ())), seen)
            self.assertEqual(3, len([r for r in res.values()
                                     if r['type'] == 'OS::Nova::Server']))

    def test_on_demand_template_written_by_resq_admit(self):
        options = flavors.FlavorOptions(vcpus=2, ram_mb=512)
        specs = ondemand.flavor_specs('od-a', 60.0, options)
        flavor = flavors.Flavor('resq.od-a.ondemand', 0, 2, 512, 1, specs)
        made, reused = heat_load(*[heat.dump(heat.ondemand_template(
            'od-a', flavor, existing, 60.0, 'cirros', 'net1'))
            for existing in (False, True)])
        for answer, want in ((made, 1), (reused, 0)):
            self.assertTrue(answer['ok'], answer.get('error'))
            res = answer['resources']
            found = [r for r in res.values()
                     if r['type'] == 'OS::Nova::Flavor']
            self.assertEqual(want, len(found))
            for r in found:
                props = r['properties']
                self.assertIs(False, props['is_public'])
                self.assertEqual([heat_check.PROJECT], props['tenants'])
                slo = extra_specs.parse(props['extra_specs'], props['vcpus'])
                self.assertEqual(extra_specs.ON_DEMAND, slo.slo)
                self.assertEqual('2', props['extra_specs'][
                    'resources_OD:' + extra_specs.RC_ONDEMAND_CORE])
            [server] = [r for r in res.values()
                        if r['type'] == 'OS::Nova::Server']
            self.assertEqual('od-a-1', server['properties']['name'])
            self.assertEqual({'resq_term': 'od-a', 'resq_slo': 'on-demand'},
                             server['properties']['metadata'])

    def test_one_template_for_an_slo_file(self):
        cluster = test_admission.body(
            test_admission.node('h1', pcpu=6),
            test_admission.domain('d1', 'h1'),
            test_admission.node('h2', pcpu=6),
            test_admission.domain('d2', 'h2'))

        class Placement:
            def allocation_candidates(self, groups):
                return cluster

            def get_provider(self, uuid):
                return {'name': uuid}

        prof = test_greedy.make_profile()
        terms = [greedy.SLOTerm(n, prof, 8.0, 25.0)
                 for n in ('fw', 'nat', 'ids')]
        chains = {'fw': 'edge', 'nat': 'edge', 'ids': None}
        batch = planner.plan(Placement(), terms, flavors.FlavorOptions(),
                             chains)
        text = heat.dump(heat.batch_template(
            batch.plans, (), 'cirros', None, chains, 'edge.yaml'))
        answer, = heat_load(text)
        res, seen = self.check(answer, 'batch')
        self.assertEqual(sum(len(p.flavors) for p in batch.plans), seen)
        servers = {r['properties']['name']: r for r in res.values()
                   if r['type'] == 'OS::Nova::Server'}
        self.assertEqual(sum(len(p.instances) for p in batch.plans),
                         len(servers))
        tmpl = yaml.safe_load(text)
        self.assertEqual('edge', tmpl['resources']['server_0'][
            'properties']['metadata']['resq_chain'])
        last = 'server_%d' % (len(servers) - 1)
        self.assertNotIn('resq_chain',
                         tmpl['resources'][last]['properties']['metadata'])
        self.assertEqual('server_%d' % (len(servers) - 2),
                         tmpl['resources'][last]['depends_on'])

    def test_what_heat_refuses(self):
        good = yaml.safe_load(heat.dump(heat.template(_plan(), image='x')))

        def changed(fn):
            tmpl = yaml.safe_load(yaml.safe_dump(good))
            fn(tmpl['resources'])
            return yaml.safe_dump(tmpl)

        def rename_prop(res):
            props = res['flavor_resq_fw-a_2w']['properties']
            props['public'] = props.pop('is_public')

        def bad_type(res):
            res['server_0']['type'] = 'OS::Nova::Servr'

        def tenants_not_a_list(res):
            res['flavor_resq_fw-a_2w']['properties']['tenants'] = 'x'

        def vcpus_not_integer(res):
            res['flavor_resq_fw-a_2w']['properties']['vcpus'] = 'two'

        cases = [(rename_prop, 'Unknown Property public'),
                 (bad_type, 'OS::Nova::Servr'),
                 (tenants_not_a_list, 'tenants'),
                 (vcpus_not_integer, 'vcpus')]
        answers = heat_load(yaml.safe_dump(good),
                            *[changed(fn) for fn, _ in cases])
        self.assertTrue(answers[0]['ok'], answers[0].get('error'))
        for (fn, expected), answer in zip(cases, answers[1:]):
            self.assertFalse(answer['ok'], fn.__name__)
            self.assertIn(expected, answer['error'], fn.__name__)
