"""What a test or demo instance of the harvester has and a production site does not.

- ``webpack.py``: the Semantic UI ``theme.config`` that an Invenio instance normally provides,
  for the built admin panel (the browser test, ``./run.sh panel``).
- Entry points that register the sample target (``oai-sample-records``) when an application
  sets ``OAI_HARVESTER_SAMPLE_TARGET``; the plugin itself never imports its test support.

``./run.sh`` installs this package into the project's virtualenv; ``pip install
oarepo-oaipmh-harvester`` does not.
"""
