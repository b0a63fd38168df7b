"""The compute client reads every page, whatever Nova's max_limit.

Nova caps ``limit`` at its ``[api] max_limit`` without saying so; a client
that stops at the first page shorter than the ``limit`` it asked for reads
only the first page. A fake endpoint pages the way Nova does (marker or
offset), with a cap smaller than what the client asks for.
"""

import json
from urllib import parse

from resq_common.clients import compute as compute_mod
from tests import base


class Response:
    def __init__(self, body, status=200):
        self.status_code = status
        self.content = json.dumps(body).encode()
        self.headers = {}

    def json(self):
        return json.loads(self.content)


class PagingNova:
    """Lists paged by limit and marker (or offset), capped at max_limit."""

    def __init__(self, lists, max_limit):
        self.lists = lists
        self.max_limit = max_limit
        self.requests = []

    def request(self, url, method, **kwargs):
        self.requests.append(url)
        path, _, query = url.partition('?')
        args = dict(parse.parse_qsl(query))
        key, items, marker_key = self.lists[path]
        limit = min(int(args.get('limit', self.max_limit)), self.max_limit)
        start = int(args.get('offset', 0))
        if 'marker' in args:
            ids = [str(i[marker_key]) for i in items]
            if args['marker'] not in ids:
                return Response({'badRequest': {'message': 'marker not '
                                                'found'}}, 400)
            start = ids.index(args['marker']) + 1
        return Response({key: items[start:start + limit]})


class PaginationTest(base.TestCase):

    def client(self, n, max_limit, path='/os-hypervisors/detail',
               key='hypervisors', marker_key='id'):
        items = [{marker_key: 'item-%04d' % i, 'n': i} for i in range(n)]
        nova = PagingNova({path: (key, items, marker_key)}, max_limit)
        return compute_mod.ComputeClient(nova), nova

    def test_every_page_is_read_when_nova_caps_the_limit(self):
        for n, cap in ((0, 3), (1, 3), (3, 3), (7, 3), (2500, 1000),
                       (2500, 200)):
            client, nova = self.client(n, cap)
            got = client.list_hypervisors()
            self.assertEqual(list(range(n)), [h['n'] for h in got],
                             (n, cap))
            # One request per page, and one more that finds nothing when
            # the last page is as long as the first (a single page
            # included: the client cannot tell it was not capped).
            pages = -(-n // cap) if n else 1
            extra = 1 if n and (n <= cap or n % cap == 0) else 0
            self.assertEqual(pages + extra, len(nova.requests), (n, cap))

    def test_server_groups_page_by_offset(self):
        client, nova = self.client(
            7, 3, path='/os-server-groups', key='server_groups')
        self.assertEqual(list(range(7)),
                         [g['n'] for g in client.list_server_groups()])
        self.assertIn('offset=3', nova.requests[1])
        self.assertIn('offset=6', nova.requests[2])

    def test_migrations_page_by_uuid(self):
        client, nova = self.client(
            5, 2, path='/os-migrations', key='migrations', marker_key='uuid')
        got = client.live_migrations('server-1')
        self.assertEqual(5, len(got))
        self.assertIn('marker=item-0001', nova.requests[1])

    def test_a_failing_page_fails_the_list(self):
        client, nova = self.client(5, 2)

        def broken(url, method, **kwargs):
            if 'marker' in url:
                return Response({'computeFault': {'message': 'cell down'}},
                                500)
            return PagingNova.request(nova, url, method, **kwargs)

        nova.request = broken
        exc = self.assertRaises(compute_mod.ComputeError,
                                client.list_hypervisors)
        self.assertIn('500', str(exc))
