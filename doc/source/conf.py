# Sphinx configuration of the resq-nova documentation.

import os
import sys

# resq_figures: the :num: role, figures from figures.json.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '_exts'))

extensions = [
    'resq_figures',
    'sphinx.ext.autodoc',
    'oslo_config.sphinxext',
    'oslo_config.sphinxconfiggen',
    'oslo_policy.sphinxext',
    'cliff.sphinxext',
]

config_generator_config_file = [
    ('../../etc/resq/resq-nova-config-generator.conf',
     '_static/resq'),
    ('../../etc/resq/resq-profiler-config-generator.conf',
     '_static/resq-profiler'),
    ('../../etc/resq/resq-agent-config-generator.conf',
     '_static/resq-agent'),
    ('../../etc/resq/resq-optimizer-config-generator.conf',
     '_static/resq-optimizer'),
    ('../../etc/resq/resq-agent-privsep-config-generator.conf',
     '_static/resq-agent-privsep'),
    ('../../etc/resq/resq-api-config-generator.conf',
     '_static/resq-api'),
]

project = 'resq-nova'
copyright = '2026, resq-nova developers'
master_doc = 'index'
exclude_patterns = ['_build']
html_theme = 'alabaster'
html_static_path = ['_static']
pygments_style = 'sphinx'
