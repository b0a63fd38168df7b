"""The checks every resq-api request passes before a handler."""

import webob

from resq_nova.api import errors
from resq_nova.api import validation
from tests import base


class PathTest(base.TestCase):

    def test_path_ids(self):
        for name, value in (('profile_id', 'fw-1.a_b'), ('hostname', 'cn:1'),
                            ('uuid', '8a7c0f0e-3c1b-4c8e-9a55-2f0c5b1d6e3a'),
                            ('plan_id', 'p' * 128), ('index', '12')):
            validation.check_path_id(name, value)
        for name, value, says in (
                ('profile_id', 'a' * 129, '129 characters, more than the 128'),
                ('hostname', 'h' * 256, 'more than the 255'),
                ('id', '-x', 'may hold only letters'),
                ('plan_id', 'a b', 'may hold only letters'),
                ('server_uuid', 'not-a-uuid', 'is not a UUID'),
                ('uuid', 'x' * 37, 'more than the 36')):
            exc = self.assertRaises(errors.BadRequest,
                                    validation.check_path_id, name, value)
            self.assertEqual('resq.path.invalid', exc.code)
            self.assertIn(says, exc.detail)

    def test_path_text(self):
        req = webob.Request.blank('/profiles/fw-1')
        self.assertEqual('/profiles/fw-1', validation.check_path(req))
        for raw in ('/profiles/a\x00', '/hosts/\x1b', '/x/\xc2\x85'):
            req.environ['PATH_INFO'] = raw
            self.assertRaises(errors.BadRequest, validation.check_path, req)
        req.environ['PATH_INFO'] = '/profiles/\xff'
        exc = self.assertRaises(errors.BadRequest, validation.check_path, req)
        self.assertIn('not UTF-8', exc.detail)


class NegotiationTest(base.TestCase):

    def test_accept(self):
        for accept in (None, '*/*', 'application/*', 'application/json',
                       'text/html, application/json;q=0.2'):
            req = webob.Request.blank('/', headers={'Accept': accept}
                                      if accept else {})
            validation.check_accept(req)
        for accept in ('text/html', 'application/json;q=0', 'image/*'):
            req = webob.Request.blank('/', headers={'Accept': accept})
            exc = self.assertRaises(errors.NotAcceptable,
                                    validation.check_accept, req)
            self.assertEqual(406, exc.status)

    def test_content_type(self):
        req = webob.Request.blank('/hosts/h', method='PUT', body=b'{}')
        req.content_type = 'application/json; charset=utf-8'
        validation.check_content_type(req)
        req.content_type = 'text/plain'
        exc = self.assertRaises(errors.UnsupportedMediaType,
                                validation.check_content_type, req)
        self.assertEqual(415, exc.status)
        # No body, or a method without one: not checked.
        validation.check_content_type(webob.Request.blank(
            '/plans/p/cancel', method='POST'))
        validation.check_content_type(webob.Request.blank(
            '/hosts', headers={'Content-Type': 'text/plain'}))


class DocumentTest(base.TestCase):

    def test_unstorable(self):
        self.assertIsNone(validation.unstorable(
            {'a': [1, 'x', None, True, 2 ** 63 - 1, -2 ** 63, 1.5e300]}))
        for doc, where in (({'a': 'x\x00'}, 'a'),
                           ({'a': [{'b': '\ud800'}]}, 'a.0.b'),
                           ({'k\x00': 1}, 'k\x00'),
                           ([1, 2 ** 63], '1'),
                           ({'g': -2 ** 63 - 1}, 'g'),
                           ('\x00', '(top)')):
            self.assertEqual(where, validation.unstorable(doc)[0], doc)
