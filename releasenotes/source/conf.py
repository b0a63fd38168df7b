# Sphinx configuration of the resq-nova release notes.

extensions = ['reno.sphinxext']
project = 'resq-nova Release Notes'
copyright = '2026, resq-nova developers'
master_doc = 'index'
html_theme = 'alabaster'
exclude_patterns = ['_build']
