"""A minimal invenio-records-resources record type that the demo, benchmark and tests harvest into.

It is not registered by default: set ``OAI_HARVESTER_SAMPLE_TARGET = True`` to get the
``oai-sample-records`` service, its table and its index. It lives in the package (not in
``tests/``) because the README's demo command and the benchmark need the same target.
"""

SAMPLE_SERVICE_ID = "oai-sample-records"
