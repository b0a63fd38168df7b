# Sphinx configuration of the resq-nova release notes.
#
# reno reads the notes in releasenotes/notes/ from the git history and
# groups them by the tag of the release that first contains them. Until the
# first tag (1.0.0, the version setup.cfg gives pbr), every note is in the
# current series (unreleased.rst), under reno's name for a branch without
# tags, 0.0.0. When a stable series is branched, add a page for it (with
# ".. release-notes::" and ":branch: stable/<series>") to index.rst, above
# "unreleased", as OpenStack projects do. See
# doc/source/contributor/releases.rst.

extensions = ['reno.sphinxext']
project = 'resq-nova Release Notes'
copyright = '2026, resq-nova developers'
master_doc = 'index'
# The release notes cover every version: none is the document's own.
version = ''
release = ''
html_theme = 'alabaster'
html_static_path = ['_static']
exclude_patterns = ['_build']
