"""Default configuration (every key can be overridden in invenio.cfg)."""

OAI_HARVESTER_DEFAULT_BATCH_SIZE = 100
"""Records written per unit of work (one database commit and one bulk index call)."""

OAI_HARVESTER_DEFAULT_TRANSFORMER = "oai_dc"
"""Transformer used when a harvester names none."""

OAI_HARVESTER_TRANSFORMERS = {}
"""Extra transformers, ``{name: "module:Class"}`` or ``{name: class}``; they win over entry points."""

OAI_HARVESTER_REQUEST_TIMEOUT = (10.0, 120.0)
"""Connect and read timeout of each OAI-PMH request, in seconds."""

OAI_HARVESTER_MAX_RETRIES = 5
"""Retries of one request on connection errors, timeouts, 429 and 5xx."""

OAI_HARVESTER_MAX_RETRY_WAIT = 600.0
"""Upper bound, in seconds, on the total time one request may wait for retries."""

OAI_HARVESTER_MAX_RESTARTS = 3
"""How often a window restarts from its first request after badResumptionToken."""

OAI_HARVESTER_USER_AGENT = None
"""User-Agent of harvest requests; None names the harvester and its version."""

OAI_HARVESTER_CONTACT_EMAIL = None
"""Contact address appended to the User-Agent, as the harvester guidelines ask."""

OAI_HARVESTER_REQUEST_DELAY = 0.0
"""Polite pause, in seconds, between two requests to the same provider."""

OAI_HARVESTER_SAMPLE_TARGET = False
"""Register the ``oai-sample-records`` service (demo, benchmark and tests)."""

OAI_HARVESTER_IDENTITY = "system"
"""Identity that writes into the target services; only the system identity is supported."""

OAI_HARVESTER_RECONCILE = "auto"
"""After a complete, error-free full harvest, delete local records the provider no longer lists:
"auto" when the provider keeps no tombstones (deletedRecord `no` or `transient`), "always", "never"."""

OAI_HARVESTER_RECONCILE_MAX_SHARE = 0.2
"""Reconciliation refuses (and reports) when it would delete more than this share of records."""

OAI_HARVESTER_CONCURRENT_RUNS = "fail"
"""A second run of a harvester that is already running: "fail" at once, or "wait" for the first."""

OAI_HARVESTER_LOCK_TIMEOUT = 3600.0
"""With "wait": how long, in seconds, before the waiting run gives up."""

OAI_HARVESTER_PREFETCH_BATCHES = 2
"""Batches read ahead from the provider while one is written (0 reads and writes in turn)."""
