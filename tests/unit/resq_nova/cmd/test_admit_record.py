"""What resq-admit records in resq-api after a boot."""

import io
import types

from resq_nova.cmd import admit
from tests import base


class Recorder:
    def __init__(self):
        self.created = []

    def create_term(self, values):
        self.created.append(values)
        return dict(values, uuid='t-1')


def conf(**kw):
    values = dict(slo=None, profile=None, throughput_mpps=None,
                  latency_p95_us=None, packet_bytes=None)
    values.update(kw)
    return types.SimpleNamespace(**values)


class RecordTermTest(base.TestCase):

    def test_booted_term_is_recorded(self):
        client, err = Recorder(), io.StringIO()
        doc = {'term': 'fw', 'flavors': [{'name': 'resq.fw.2w'}],
               'servers': [{'id': 's-1'}, {'id': 's-2'}]}
        rc = admit.record_term(client, conf(profile='p', throughput_mpps=2.0,
                                            latency_p95_us=20.0), doc, err)
        self.assertEqual(0, rc)
        self.assertEqual('t-1', doc['slo_term'])
        (values,) = client.created
        self.assertEqual(('fw', 'p', 'reserved', ['resq.fw.2w'],
                          ['s-1', 's-2']),
                         (values['name'], values['profile_id'],
                          values['slo'], values['flavors'],
                          values['servers']))

    def test_a_requested_term_is_noted(self):
        client, err = Recorder(), io.StringIO()
        client.create_term = lambda values: dict(values, uuid='t-2',
                                                 status='requested')
        doc = {'term': 'fw', 'servers': [{'id': 's-1'}]}
        self.assertEqual(0, admit.record_term(client, conf(profile='p'),
                                              doc, err))
        self.assertIn('t-2 is recorded as requested', err.getvalue())

    def test_on_demand_term_without_a_profile_is_not_recorded(self):
        client, err = Recorder(), io.StringIO()
        doc = {'term': 'ids', 'flavor': {'name': 'resq.ids.od'},
               'servers': [{'id': 's-1'}]}
        rc = admit.record_term(client, conf(slo='on-demand'), doc, err)
        self.assertEqual(0, rc)
        self.assertEqual([], client.created)
        self.assertIn('not recorded in resq-api', err.getvalue())

    def test_nothing_booted_nothing_recorded(self):
        client = Recorder()
        self.assertEqual(0, admit.record_term(client, conf(profile='p'),
                                              {'servers': []}, io.StringIO()))
        self.assertEqual([], client.created)
