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
"""The project's commands, run as an operator runs them.

``openstack resq ...`` runs on the test's own credentials, given as the
``OS_*`` variables (any the environment had are dropped);
``resq-optimizer`` on its configuration file. Both are looked for beside
the Python running the tests first (the virtualenv tempest runs from),
then on ``PATH``.
"""

import os
import shutil
import subprocess
import sys

from oslo_log import log as logging
from tempest import config

CONF = config.CONF
LOG = logging.getLogger(__name__)


def find_command(name):
    """The path of executable ``name``, or None."""
    beside = os.path.join(os.path.dirname(sys.executable), name)
    if os.access(beside, os.X_OK):
        return beside
    return shutil.which(name)


def credentials_env(creds):
    """The environment of a command run on tempest credentials ``creds``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith('OS_')}
    env.update({
        'OS_AUTH_URL': CONF.identity.uri_v3,
        'OS_IDENTITY_API_VERSION': '3',
        'OS_USERNAME': creds.username,
        'OS_PASSWORD': creds.password,
        'OS_PROJECT_NAME': creds.project_name,
        'OS_USER_DOMAIN_NAME': creds.user_domain_name,
        'OS_PROJECT_DOMAIN_NAME': creds.project_domain_name,
        'OS_REGION_NAME': CONF.identity.region,
        'OS_INTERFACE': CONF.identity.v3_endpoint_type.replace('URL', ''),
    })
    if CONF.identity.disable_ssl_certificate_validation:
        env['OS_INSECURE'] = 'true'
    elif CONF.identity.ca_certificates_file:
        env['OS_CACERT'] = CONF.identity.ca_certificates_file
    return env


def run(argv, env=None, timeout=900):
    """Run ``argv``; the CompletedProcess (text), whatever its status."""
    LOG.info('Running %s', ' '.join(argv))
    proc = subprocess.run(argv, capture_output=True, text=True, env=env,
                          timeout=timeout, stdin=subprocess.DEVNULL)
    LOG.info('%s exited %d\nstdout:\n%s\nstderr:\n%s', argv[0],
             proc.returncode, proc.stdout, proc.stderr)
    return proc


def describe(proc):
    """A failed command's status and output, for a test failure."""
    return '%s exited %d\nstdout:\n%s\nstderr:\n%s' % (
        ' '.join(proc.args), proc.returncode, proc.stdout[-4000:],
        proc.stderr[-4000:])
