"""Default configuration (every key can be overridden in invenio.cfg)."""

OAI_HARVESTER_DEFAULT_BATCH_SIZE = 100
"""Records written per unit of work (one database commit and one bulk index call)."""

OAI_HARVESTER_DRAFTS_LARGEST_BATCH = 10
"""The most records written into a draft-enabled target (InvenioRDM) in one unit of work,
whatever a harvester's batch size: SQLAlchemy-Continuum's work at each of the ~100 flushes of
a record's write grows with what its transaction holds, so an InvenioRDM record written in a
batch of 100 cost 1.5 times one in a batch of 10 (docs/benchmark.rst). ``None``: the
harvester's batch size."""

OAI_HARVESTER_DEFAULT_TRANSFORMER = "oai_dc"
"""Transformer used when a harvester names none and its target is not InvenioRDM's records
(for those, ``OAI_HARVESTER_RDM_TRANSFORMERS``)."""

OAI_HARVESTER_RDM_TRANSFORMERS = {
    "oai_dc": "oai_dc_rdm",
    "oai_datacite": "oai_datacite_rdm",
    "datacite": "oai_datacite_rdm",
    "lido": "lido_rdm",
    "marcxml": "marcxml_rdm",
    "marc21": "marcxml_rdm",
    "oai_openaire": "oai_openaire_rdm",
}
"""Transformer used, by metadata prefix, when a harvester into InvenioRDM's records names none:
InvenioRDM takes only what an InvenioRDM transformer makes (``oai_dc`` would make records it
refuses). A prefix not listed needs the transformer named."""

OAI_HARVESTER_PREFERRED_PREFIXES = {
    "inveniordm": [
        "lido",
        "oai_datacite",
        "datacite",
        "oai_openaire",
        "marcxml",
        "marc21",
        "oai_dc",
    ],
    "other": ["oai_dc"],
}
"""The metadata prefixes a harvester created without one may get, richest first, by the kind
of its target (``inveniordm``: InvenioRDM's records; ``other``: every other target). The check
asks the provider's ListMetadataFormats and picks the first prefix it offers for which a
transformer into the target exists (into InvenioRDM: ``OAI_HARVESTER_RDM_TRANSFORMERS``; into
another target: ``OAI_HARVESTER_DEFAULT_TRANSFORMER`` reads the prefixes listed here), and that
transformer unless one is named. A prefix the operator names is never overridden."""

OAI_HARVESTER_TRANSFORMERS = {}
"""Extra transformers, ``{name: "module:Class"}`` or ``{name: class}``, a transformer with
options ``{name: {"transformer": ..., "options": {...}}}`` or a chain ``{name: {"chain": [...]}}``
(docs/transformers.rst, "Options and chains"); they win over entry points."""

OAI_HARVESTER_RDM_DEFAULT_RESOURCE_TYPE = "publication"
"""The InvenioRDM transformers' resource type (an id of the ``resourcetypes`` vocabulary) for a
record whose type they cannot map; a transformer's ``default_resource_type`` option wins."""

OAI_HARVESTER_RDM_DEFAULT_CONTRIBUTOR_ROLE = "other"
"""The InvenioRDM transformers' role (``contributorsroles`` vocabulary) of a contributor whose
role they cannot map (RDM requires one); a ``default_contributor_role`` option wins."""

OAI_HARVESTER_RDM_MISSING_DATE = "datestamp-year"
"""What the InvenioRDM transformers make of a record none of whose dates RDM takes as its
publication date (EDTF level 0; ``oai_dc_rdm``: a ``dc:date``, ``oai_datacite_rdm``: an Issued
date or the publicationYear): ``"datestamp-year"`` publishes it with the year of its OAI
datestamp and a warning naming the values that could not be used; ``"fail"`` fails the record
with an error naming them. A transformer's ``missing_date`` option wins."""

OAI_HARVESTER_RDM_MISSING_CREATOR = {
    "oai_dc_rdm": "contributors",
    "oai_datacite_rdm": "fail",
    "lido_rdm": "holder",
    "marcxml_rdm": "contributors",
    "oai_openaire_rdm": "contributors",
}
"""What each InvenioRDM transformer (by its registered name) makes of a record that names no
creator, which RDM requires: ``"fail"`` fails it with an error; ``"contributors"`` publishes it
with its contributors as creators (else its publisher or holder); ``"holder"`` with the holding
or publishing institution it names as an organisational creator (else its contributors); any
other text is a fixed name given as the creator (``"Unknown"``). Every choice but ``fail`` warns
on the record and, when the record names nobody at all, gives
``OAI_HARVESTER_RDM_UNKNOWN_CREATOR``. A transformer missing here fails such records. A
harvester's ``missing_creator``, else a transformer's ``missing_creator`` option, wins."""

OAI_HARVESTER_RDM_UNKNOWN_CREATOR = "Unknown"
"""The organisational creator given to a record that names no person or organisation at all
when its ``missing_creator`` policy is ``contributors`` or ``holder``."""

OAI_HARVESTER_RDM_LIDO_DEFAULT_RESOURCE_TYPE = "physicalobject"
"""The ``lido_rdm`` transformer's resource type (an id of the ``resourcetypes`` vocabulary) for
a museum object whose ``objectWorkType`` and ``classification`` terms are not in its type table
(docs/lido.rst) and whose ``category`` is not E22 Man-Made Object; a warning names the terms.
The transformer's ``default_resource_type`` option wins."""

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

OAI_HARVESTER_BACKOFF_FACTOR = 1.0
"""Exponential backoff factor of retries, in seconds, when the provider sends no Retry-After."""

OAI_HARVESTER_REQUEST_DEADLINE = 300.0
"""Total time, in seconds, one HTTP exchange may take (the read timeout bounds each read only)."""

OAI_HARVESTER_MAX_RESPONSE_BYTES = 100 * 1024 * 1024
"""Largest response body accepted, counted after decompression."""

OAI_HARVESTER_MAX_RECORD_BYTES = 5 * 1024 * 1024
"""Largest record (its XML) kept; a larger one keeps its header and fails alone with an error."""

OAI_HARVESTER_MAX_PAGES = 100_000
"""Pages one list may have in one run, restarts included; a run that meets it fails, naming it."""

OAI_HARVESTER_MAX_EMPTY_PAGES = 10
"""Consecutive empty pages that still carry a resumption token before the run fails."""

OAI_HARVESTER_PROGRESS_WINDOW = 100
"""No-progress rule: over any this many consecutive pages, the provider must average at least
OAI_HARVESTER_MIN_ITEMS_PER_PAGE items (or advance its cursor as much); 0 turns it off."""

OAI_HARVESTER_MIN_ITEMS_PER_PAGE = 0.25
"""See OAI_HARVESTER_PROGRESS_WINDOW."""

OAI_HARVESTER_FORBIDDEN_NETWORKS = [
    "169.254.0.0/16",
    "fe80::/10",
    "fd00:ec2::254/128",
    "100.100.100.200/32",
]
"""Networks (CIDR) never connected to, checked after DNS on every connection and redirect:
link-local addresses and cloud metadata services."""

OAI_HARVESTER_ALLOW_PRIVATE_NETWORKS = False
"""Whether providers (and their redirects) may be on this machine (loopback) or on private
networks (10/8, 172.16/12, 192.168/16, fc00::/7). Off by default: say True to harvest the
site's own intranet."""

OAI_HARVESTER_FILES_MAX_SIZE = 10 * 1024**3
"""Bytes a harvested file may have (10 GiB) where the harvester sets no files_max_size: a
larger one is not fetched (its Content-Length says so before any byte is read; a body that
runs past it is cut off while reading)."""

OAI_HARVESTER_FILES_MAX_PER_RECORD = 100
"""Files one record may bring (harvesters with files copy or link); the rest are left out with
a warning."""

OAI_HARVESTER_FILES_MAX_RUN_BYTES = None
"""Bytes one run may fetch (None: no limit); a record whose files would pass it is left for
the next run (it fails with a retryable error naming the limit)."""

OAI_HARVESTER_FILES_PER_HOST = 2
"""Files fetched at once from one host (politeness): across every worker process of the site
where they are counted in Redis (OAI_HARVESTER_FILES_SLOTS_REDIS_URL), else in each process."""

OAI_HARVESTER_FILES_SLOTS_REDIS_URL = None
"""The Redis in which downloads at once per host are counted, so that
OAI_HARVESTER_FILES_PER_HOST holds across the site's worker processes. None: the site's cache
Redis (CACHE_REDIS_URL) where CACHE_TYPE is redis, as in InvenioRDM; "": each process counts its
own. A Redis that does not answer is said in the log, and each process counts its own."""

OAI_HARVESTER_FILES_DEADLINE = 3600.0
"""Seconds one file's download may take in all (a slow drip ends there and is retried)."""

OAI_HARVESTER_ALLOW_CROSS_ORIGIN_REDIRECTS = False
"""Follow a provider's redirects to any origin; by default only within its base URL's origin
(scheme, host and port) and OAI_HARVESTER_ALLOWED_REDIRECT_ORIGINS."""

OAI_HARVESTER_ALLOWED_REDIRECT_ORIGINS = []
"""Further origins redirects may lead to, e.g. ``["https://oai.example.org"]``."""

OAI_HARVESTER_MAX_REDIRECTS = 10
"""Redirects followed for one request."""

OAI_HARVESTER_RECONCILE = "auto"
"""After a complete, error-free full harvest, delete local records the provider no longer lists:
"auto" when the provider keeps no tombstones (deletedRecord `no` or `transient`), "always", "never"."""

OAI_HARVESTER_DELETION_GUARD = 10.0
"""Percent of a harvester's live records one run may delete (by tombstones or a
reconciliation) before it holds its deletions instead (the records stay published, the run is
partial, its watermark stays; an operator confirms or rejects them: ``invenio oai deletions``).
A harvester's own ``deletion_guard`` overrides it; 0 turns the guard off."""

OAI_HARVESTER_DELETION_GUARD_MINIMUM = 20
"""Fewer deletions than this in one run are never held, whatever their share."""

OAI_HARVESTER_MATCH_ON = ["doi", "handle", "arxiv", "pmid", "isbn", "urn"]
"""The identifier schemes (RDM's names) by which a new harvested record is matched to a local
record that no harvester tracks (InvenioRDM targets), tried in this order: one match is taken
over where the harvester's doi_conflicts says take-over (else the record fails naming it), two
fail naming both; never by title. A harvester's own ``match_on`` overrides it. The DOI is the
PID store's and always looked up."""

OAI_HARVESTER_UNDO_RUNS = 20
"""How many of a harvester's newest runs can be undone (``invenio oai undo RUN_ID``): each
keeps the tracking rows it changed as they were before it, and older runs' journals go.
0 keeps no journal (no run can be undone; a run writes a little less)."""

OAI_HARVESTER_RECONCILE_MAX_SHARE = 0.2
"""Reconciliation refuses (and reports) when it would delete more than this share of records."""

OAI_HARVESTER_CONCURRENT_RUNS = "fail"
"""A second run of a harvester that is already running: "fail" at once, or "wait" for the first."""

OAI_HARVESTER_LOCK_TIMEOUT = 3600.0
"""With "wait": how long, in seconds, before the waiting run gives up."""

OAI_HARVESTER_MAX_RUN_SECONDS = 48 * 3600.0
"""Longest a run may take; one that is still reading or writing then fails, naming this
setting, and keeps the watermark (the next run continues the same window)."""

OAI_HARVESTER_SPOOL = False
"""Read each list to its end as fast as the provider serves it, keeping the batches not yet
written in a temporary file: for providers whose resumption tokens expire quickly
(invenio-oaiserver: 60 s) harvested into a slow target (InvenioRDM: a few records a second).
Off: read ahead OAI_HARVESTER_PREFETCH_BATCHES batches in memory."""

OAI_HARVESTER_SPOOL_DIRECTORY = None
"""Where the spool file goes (None: the system's temporary directory); it needs room for the
XML of the records read but not yet written, and is removed at the end of the run."""

OAI_HARVESTER_CLOCK_TOLERANCE = 600.0
"""Seconds a provider's responseDate may be ahead of our clock (or behind the stored watermark)
before it is not believed: such a run asks without `until` and stores no watermark."""

OAI_HARVESTER_PREFETCH_BATCHES = 2
"""Batches read ahead from the provider while one is written (0 reads and writes in turn)."""

# --- Operator surfaces: REST API, administration panel, permissions, reports, fixtures -------

OAI_HARVESTER_PREFLIGHT_CHECK = True
"""Ask the provider (Identify, formats, sets) before a harvester is created or its endpoint,
prefix or sets change; callers can skip it (``check=False``, ``--no-check``, ``?check=false``)."""

OAI_HARVESTER_PREFLIGHT_TIMEOUT = 15.0
"""Seconds the whole preflight check may take (every request and retry of it): an operator
waits for it in a form, and an endpoint that accepts connections but never answers would hold
them for about half a minute. Past it, the harvester is refused naming this bound."""

OAI_HARVESTER_PERMISSION_POLICY = "oarepo_oaipmh_harvester.permissions:HarvesterPermissionPolicy"
"""Permission policy of harvesters and their runs (a class or an import string)."""

OAI_HARVESTER_RECORDS_PERMISSION_POLICY = (
    "oarepo_oaipmh_harvester.permissions:HarvestedRecordPermissionPolicy"
)
"""Permission policy of harvested records (a class or an import string)."""

OAI_HARVESTER_LOCAL_RECORD_URLS = {}
"""Links to local records when the target service gives none, per target service id:
``{"records": {"self": "{api}/records/{pid}", "self_html": "{ui}/records/{pid}"}}``."""

OAI_HARVESTER_REPORTS = True
"""E-mail the harvest managers when a run ends."""

OAI_HARVESTER_REPORT_STATUSES = ["SUCCESS", "PARTIAL_SUCCESS", "FAILED"]
"""Run outcomes that are reported."""

OAI_HARVESTER_REPORT_SENDER = None
"""Sender of reports; None uses ``MAIL_DEFAULT_SENDER``."""

OAI_HARVESTER_REPORT_MAX_FAILURES = 20
"""How many reasons records failed for a report lists (each with its count, a few of its
records and a link to all of them in the panel)."""

OAI_HARVESTER_MAX_RUN_IDENTIFIERS = 1000
"""Identifiers one run may be asked to harvest (``identifiers``: REST run body, Run now form,
invenio-jobs run arguments, ``invenio oai harvest --identifier``); each is one GetRecord
request to the provider. More are refused with a 400 that names this setting."""

OAI_HARVESTER_FIXTURES_FILE = None
"""Harvesters loaded by ``invenio oai harvester load`` without a file argument;
None means ``<instance path>/app_data/oai_harvesters.yaml``."""

OAI_HARVESTER_ADMIN_HARVESTERS_SEARCH = {
    "facets": [],
    "sort": ["name", "id", "newest", "updated"],
}
"""Search page of the "OAI-PMH harvesters" admin list."""

OAI_HARVESTER_ADMIN_HARVESTERS_SORT_OPTIONS = {
    "name": {"title": "Name", "fields": ["name"]},
    "id": {"title": "Id", "fields": ["id"]},
    "newest": {"title": "Newest", "fields": ["-created"]},
    "updated": {"title": "Recently updated", "fields": ["-updated"]},
}
"""Sort options offered by the "OAI-PMH harvesters" admin list (keys of the service's sorts)."""

OAI_HARVESTER_ADMIN_RECORDS_SEARCH = {
    "facets": ["harvester", "deleted", "has_errors", "has_warnings", "has_conflicts"],
    "sort": ["newest", "oldest", "identifier", "datestamp"],
}
"""Search page of the "OAI-PMH harvested records" admin list."""

OAI_HARVESTER_ADMIN_RECORDS_SORT_OPTIONS = {
    "newest": {"title": "Recently harvested", "fields": ["-harvested_at"]},
    "oldest": {"title": "Least recently harvested", "fields": ["harvested_at"]},
    "identifier": {"title": "OAI identifier", "fields": ["oai_identifier"]},
    "datestamp": {"title": "Newest datestamp", "fields": ["-datestamp"]},
}
"""Sort options offered by the "OAI-PMH harvested records" admin list."""

OAI_HARVESTER_ADMIN_RECORDS_FACETS = {
    "harvester": {"title": "Harvester", "ui": {"field": "harvester"}},
    "deleted": {"title": "Deleted at the source", "ui": {"field": "deleted"}},
    "has_errors": {"title": "With errors", "ui": {"field": "has_errors"}},
    "has_warnings": {"title": "With warnings", "ui": {"field": "has_warnings"}},
    "has_conflicts": {"title": "With conflicts", "ui": {"field": "has_conflicts"}},
}
"""Facets of the "OAI-PMH harvested records" admin list (aggregations of the records API)."""

OAI_HARVESTER_WRITE_MODE = "local"
""""local": a run writes its batches itself. "celery": a run started by invenio-jobs hands each
batch to a Celery task (a subtask of the run), so that several workers write in parallel."""

OAI_HARVESTER_WRITE_QUEUE = None
"""Celery queue of the batch-writing tasks (None: the default queue)."""

OAI_HARVESTER_SUBTASK_TIMEOUT = 6 * 3600.0
"""How long a run waits, after reading the last page, for its batches to be written."""

OAI_HARVESTER_SUBTASK_TAKEOVER_AFTER = 30.0
"""A batch no worker has started after this many seconds is written by the run itself."""

OAI_HARVESTER_TARGETS = None
"""Service ids that harvesters may write to. None: every records service of the registry whose
records are invenio-records `Record`s, except those in OAI_HARVESTER_TARGET_EXCLUDE."""

OAI_HARVESTER_TARGET_EXCLUDE = ["users", "groups", "domains"]
"""Records services that are never harvest targets (accounts, groups, e-mail domains)."""

OAI_HARVESTER_RETRY_PER_RUN = 100
"""Failed records (of earlier runs, not seen in this run's window) that a successful or partial
harvest asks for again with GetRecord when it ends; 0 turns the retries off."""

OAI_HARVESTER_RETRY_MAX_ATTEMPTS = 5
"""Failed attempts after which a record is no longer retried by the end-of-run retries (it
stays listed with its error; ``invenio oai harvest ID --retry-errors`` still asks for it)."""

OAI_HARVESTER_RETRY_BACKOFF = 3600.0
"""Seconds before a failed record is retried, doubled with every further failed attempt
(1 h, 2 h, 4 h, ...), at most a week."""

OAI_HARVESTER_PREVIEW_LIMIT = 100
"""Records a preview (dry run) examines unless asked for another number; a larger preview is
cut there and says so. A preview writes every record in a transaction it rolls back, so it
costs what a real run costs for those records."""

OAI_HARVESTER_PREVIEW_MAX_LIMIT = 10000
"""The largest number of records one preview may be asked to examine."""

OAI_HARVESTER_PREVIEW_DIFFS = 20
"""Per-record changes (field diffs, errors) a preview's report lists; the counts cover all."""

OAI_HARVESTER_RUN_LOG_INTERVAL = 60.0
"""Seconds between the progress lines a run logs (the log on its page in Administration →
Jobs); a run also logs its windows, each batch's failures grouped by reason and its end."""

OAI_HARVESTER_PUBLIC_SOURCES_PAGE = False
"""Serve ``/about/harvest``, a public page (no login) of the sources this site harvests: each
harvester's name, its record count and its last successful harvest (never its endpoint or its
credentials)."""
