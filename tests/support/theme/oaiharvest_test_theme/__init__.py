"""What an Invenio instance provides for its Semantic UI build: ``theme.config`` and a site folder.

Only the end-to-end browser test and ``./run.sh panel`` install this package; a real instance has
its own theme.
"""
