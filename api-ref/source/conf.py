# resq-api reference, built with os-api-ref (tox -e api-ref).

extensions = ['os_api_ref', 'openstackdocstheme']

project = 'resq-nova'
copyright = '2026, resq-nova developers'
html_theme = 'openstackdocs'
openstackdocs_repo_name = 'x/resq-nova'
openstackdocs_use_storyboard = False
html_theme_options = {'sidebar_mode': 'toc'}
master_doc = 'index'
