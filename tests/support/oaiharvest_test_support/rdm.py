"""An InvenioRDM records service without a whole InvenioRDM instance: tests, demo, benchmark.

Decision owned here: what an application needs so that invenio-rdm-records 32 or 36
(InvenioRDM 14, 15) publishes in it (the keys of rdm-records' config that would lose to other
modules' defaults, stand-ins for invenio-app-rdm's UI endpoints that publishing builds links
to, unless invenio-app-rdm is installed, a default files location, the vocabulary entries the
transformers use), and the one departure osmem-server (the demo's
embedded search) forces: no ``date_range`` histogram facet. Real InvenioRDM vocabulary entries are taken by id from
rdm-records' own fixture files: loading all of them takes minutes (7,847 languages).

Needs the ``rdm`` extra; nothing RDM-specific is imported at module level.
"""

from __future__ import annotations

import csv
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml
from flask import Blueprint, Flask

# vocabulary type -> (pid type, fixture file, ids to load)
VOCABULARY_ENTRIES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "resourcetypes": (
        "rsrct",
        "resource_types.yaml",
        (
            "publication",
            "publication-article",
            "publication-journal",
            "publication-book",
            "publication-report",
            "publication-patent",
            "dataset",
            "image",
            "image-photo",
            "software",
            "other",
        ),
    ),
    "languages": ("lng", "languages.yaml", ("deu", "eng", "ces", "fra")),
    "licenses": ("lic", "licenses.csv", ("cc-by-4.0", "cc0-1.0")),
    "titletypes": (
        "ttyp",
        "title_types.yaml",
        ("alternative-title", "subtitle", "translated-title", "other"),
    ),
    "descriptiontypes": (
        "dty",
        "description_types.yaml",
        (
            "abstract",
            "methods",
            "other",
            "series-information",
            "table-of-contents",
            "technical-info",
        ),
    ),
    "contributorsroles": (
        "cor",
        "roles.yaml",
        (
            "other",
            "editor",
            "contactperson",
            "datacurator",
            "researcher",
            "supervisor",
            "hostinginstitution",
        ),
    ),
    "creatorsroles": ("crr", "roles.yaml", ("other", "editor", "researcher", "supervisor")),
    "relationtypes": (
        "rlt",
        "relation_types.yaml",
        (
            "other",
            "ispartof",
            "haspart",
            "cites",
            "iscitedby",
            "isversionof",
            "references",
            "issupplementto",
            "isderivedfrom",
        ),
    ),
    "datetypes": (
        "dat",
        "date_types.yaml",
        ("other", "issued", "created", "updated", "accepted", "available", "collected"),
    ),
    "removalreasons": ("rem", "removal_reasons.yaml", ("duplicate", "retracted", "spam")),
}
"""What a test, the demo or the benchmark loads unless it asks for other entries."""

UI_ENDPOINTS = (
    ("/records/<pid_value>", "record_detail"),
    ("/records/<pid_value>/latest", "record_latest"),
    ("/records/<pid_value>/files/<path:filename>", "record_file_download"),
    ("/records/<pid_value>/preview/<path:filename>", "record_file_preview"),
    ("/uploads/<pid_value>", "deposit_edit"),
    ("/<any(doi):pid_scheme>/<path:pid_value>", "record_from_pid"),
)
"""invenio-app-rdm's record endpoints that publishing builds links to."""

REQUEST_UI_ENDPOINTS = (
    ("/me/requests/<request_pid_value>", "user_dashboard_request_view"),
    ("/communities/<pid_value>/requests/<request_pid_value>", "community_dashboard_request_view"),
)
"""invenio-app-rdm's request pages that a community inclusion's notification links to."""

UI_BLUEPRINT_ENTRY_POINTS = [
    "invenio_app_rdm_records = oaiharvest_test_support.rdm:create_records_ui_blueprint",
    "invenio_app_rdm_requests = oaiharvest_test_support.rdm:create_requests_ui_blueprint",
]
"""The stand-ins as entry points of the group ``invenio_base.blueprints``."""


def app_rdm_installed() -> bool:
    """invenio-app-rdm is installed (a whole InvenioRDM, as on a site).

    Then its configuration module is loaded into every app, and its own UI blueprints (the
    real endpoints) are registered, or built for links in an API app. The stand-ins below
    would clash with them (same blueprint names), and the two routes that publishing needs
    must not replace its ``APP_RDM_ROUTES``, which its blueprints read in full.
    """
    from importlib.util import find_spec

    return find_spec("invenio_app_rdm") is not None


def ui_blueprint_entry_points() -> list[str]:
    """For pytest-invenio's ``extra_entry_points``: the stand-ins, unless invenio-app-rdm is
    installed and brings the real blueprints."""
    return [] if app_rdm_installed() else list(UI_BLUEPRINT_ENTRY_POINTS)


def _placeholder(**kwargs: Any) -> str:
    return ""


def _file_download(pid_value: str, filename: str) -> Any:
    """A published record's file, as invenio-app-rdm's record_file_download sends it: read
    through the files service as the visitor (a restricted file is refused), streamed."""
    from flask import g
    from invenio_rdm_records.proxies import current_rdm_records_service as service

    item = service.files.get_file_content(g.identity, pid_value, filename)
    return item.send_file(as_attachment=True)


def create_records_ui_blueprint(app: Flask) -> Blueprint:
    """Stand-ins for the UI endpoints of invenio-app-rdm (which the harvester does not need,
    but for a file's download, which a harvest of another site's files fetches)."""
    blueprint = Blueprint("invenio_app_rdm_records", __name__)
    for rule, endpoint in UI_ENDPOINTS:
        view = _file_download if endpoint == "record_file_download" else _placeholder
        blueprint.add_url_rule(rule, endpoint, view)
    return blueprint


def create_requests_ui_blueprint(app: Flask) -> Blueprint:
    """Stand-ins for invenio-app-rdm's request pages."""
    blueprint = Blueprint("invenio_app_rdm_requests", __name__)
    for rule, endpoint in REQUEST_UI_ENDPOINTS:
        blueprint.add_url_rule(rule, endpoint, _placeholder)
    return blueprint


def prepare_app(app: Flask) -> None:
    """An app built outside pytest (demo, benchmark, Celery workers): the UI stand-ins (unless
    invenio-app-rdm brings the real ones), and a log without the missing-statistics warnings."""
    if not app_rdm_installed():
        app.register_blueprint(create_records_ui_blueprint(app))
        app.register_blueprint(create_requests_ui_blueprint(app))
    app.logger.addFilter(_WithoutMissingStatistics())


STATISTICS_QUERIES = ("record-view", "record-download")


class _WithoutMissingStatistics:
    """Drops rdm-records' warning that a statistics query is not configured.

    Indexing a record reads its view and download counts; invenio-app-rdm configures those
    queries (and their indices), a bare records service has none, and every indexed record
    would log the two missing names (the counts are indexed as zero either way).
    """

    def filter(self, record) -> bool:
        message = record.msg
        return not (
            isinstance(message, KeyError) and message.args[:1] in {(q,) for q in STATISTICS_QUERIES}
        )


def _without_publication_date(search: Mapping[str, Any]) -> dict[str, Any]:
    """osmem refuses the ``yyyy`` format of the date_histogram over a date_range field."""
    return {**search, "facets": [f for f in search["facets"] if f != "publication_date"]}


def rdm_config(*, external_dois: bool = True, osmem: bool = False) -> dict[str, Any]:
    """Configuration keys that make invenio-rdm-records (32, 36) publish in a plain Invenio app.

    `external_dois`: take DOIs from elsewhere as ``pids.doi`` (provider ``external``); RDM
    drops the doi scheme unless DataCite or Crossref is enabled. No DOI is ever minted.
    `osmem`: the search server is osmem-server, which refuses RDM's publication date facet.
    """
    from invenio_rdm_records import config as rdm
    from invenio_rdm_records.services.permissions import RDMRequestsPermissionPolicy

    config: dict[str, Any] = {
        # invenio-app-rdm sets these; without them its records' requests (community
        # inclusion) have no permission policy, and legacy REST endpoints would be built.
        "REQUESTS_PERMISSION_POLICY": RDMRequestsPermissionPolicy,
        "RECORDS_REST_ENDPOINTS": {},
    }
    if osmem:
        config["RDM_SEARCH"] = _without_publication_date(rdm.RDM_SEARCH)
        config["RDM_SEARCH_DRAFTS"] = _without_publication_date(rdm.RDM_SEARCH_DRAFTS)
    if not app_rdm_installed():
        config["APP_RDM_ROUTES"] = {
            "record_detail": "/records/<pid_value>",
            "record_file_download": "/records/<pid_value>/files/<path:filename>",
        }
    config.update(
        {
            "THEME_FRONTPAGE": False,
            "RDM_USER_MODERATION_ENABLED": False,
            "OAISERVER_ID_PREFIX": "oaiharvest-test",
            # Including a record in a community notifies; every type sent must have a builder.
            "NOTIFICATIONS_BUILDERS": _community_inclusion_builders(),
        }
    )
    if external_dois:
        pids = rdm.RDM_PERSISTENT_IDENTIFIERS
        config["RDM_PERSISTENT_IDENTIFIERS"] = {
            **pids,
            "doi": {
                **pids["doi"],
                "providers": ["external"],
                "required": False,
                "is_enabled": lambda app: True,
            },
        }
        # invenio-app-rdm refuses to start a UI app whose record and parent (concept) DOIs
        # differ in `required`; concept DOIs come only from DataCite, which stays off.
        parent_pids = rdm.RDM_PARENT_PERSISTENT_IDENTIFIERS
        config["RDM_PARENT_PERSISTENT_IDENTIFIERS"] = {
            **parent_pids,
            "doi": {**parent_pids["doi"], "required": False},
        }
    return config


def _community_inclusion_builders() -> dict[str, Any]:
    from invenio_rdm_records.notifications import builders

    classes = (
        builders.CommunityInclusionSubmittedNotificationBuilder,
        builders.CommunityInclusionAcceptNotificationBuilder,
        builders.CommunityInclusionDeclineNotificationBuilder,
        builders.CommunityInclusionCancelNotificationBuilder,
        builders.CommunityInclusionExpireNotificationBuilder,
    )
    return {builder.type: builder for builder in classes}


def fixture_dir() -> Path:
    import invenio_rdm_records

    return Path(invenio_rdm_records.__file__).parent / "fixtures" / "data" / "vocabularies"


def _csv_entry(row: dict[str, str]) -> dict[str, Any]:
    """A licenses.csv row as vocabulary data (``a__b`` columns are nested keys)."""
    entry: dict[str, Any] = {}
    for column, value in row.items():
        if not value:
            continue
        if column == "tags":
            entry["tags"] = value.split(",")
        elif "__" in column:
            outer, inner = column.split("__", 1)
            entry.setdefault(outer, {})[inner] = value
        else:
            entry[column] = value
    return entry


def fixture_entries(vocabulary: str, ids: Iterable[str], filename: str) -> list[dict[str, Any]]:
    """The entries `ids` of `vocabulary` as rdm-records' fixture file has them."""
    wanted = set(ids)
    path = fixture_dir() / filename
    if filename.endswith(".csv"):
        with path.open(newline="", encoding="utf-8") as stream:
            found = [_csv_entry(row) for row in csv.DictReader(stream) if row["id"] in wanted]
    else:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the languages file is big
        with path.open(encoding="utf-8") as stream:
            found = [entry for entry in yaml.load(stream, Loader=loader) if entry["id"] in wanted]
    missing = wanted - {entry["id"] for entry in found}
    if missing:
        raise LookupError(f"{sorted(missing)} are not in {path}")
    return [{**entry, "type": vocabulary} for entry in found]


MUSEUM_VOCABULARY_ENTRIES = {
    "resourcetypes": ("rsrct", "resource_types.yaml", ("physicalobject", "image-drawing")),
    "licenses": ("lic", "licenses.csv", ("cc-pdm-1.0", "cc-by-sa-4.0")),
    "relationtypes": ("rlt", "relation_types.yaml", ("isdocumentedby",)),
    "contributorsroles": ("cor", "roles.yaml", ("sponsor", "producer", "rightsholder")),
    "languages": ("lng", "languages.yaml", ("nld",)),
}
"""The vocabulary entries museum objects (lido_rdm) map to, besides VOCABULARY_ENTRIES."""


def load_vocabularies(
    entries: Mapping[str, tuple[str, str, tuple[str, ...]]] = VOCABULARY_ENTRIES,
) -> None:
    """Create the vocabulary types and entries that do not exist yet, and make them searchable
    (the transformers find eu-repo types, 2-letter languages and license URLs by search)."""
    from invenio_access.permissions import system_identity
    from invenio_pidstore.errors import PIDAlreadyExists
    from invenio_search import current_search
    from invenio_vocabularies.proxies import current_service as vocabularies
    from invenio_vocabularies.records.api import Vocabulary
    from invenio_vocabularies.records.models import VocabularyType

    for vocabulary, (pid_type, filename, ids) in entries.items():
        if VocabularyType.query.filter_by(id=vocabulary).one_or_none() is None:
            vocabularies.create_type(system_identity, vocabulary, pid_type)
        for entry in fixture_entries(vocabulary, ids, filename):
            try:
                vocabularies.create(system_identity, entry)
            except PIDAlreadyExists:
                continue
    # Index.refresh ignores SEARCH_INDEX_PREFIX.
    current_search.flush_and_refresh(Vocabulary.index._name)


def create_default_location(name: str = "rdm-default") -> Any:
    """A default files location: every draft gets a bucket, metadata-only ones too."""
    from invenio_db import db
    from invenio_files_rest.models import Location

    existing = Location.get_default()
    if existing is not None:
        return existing
    location = Location(name=name, uri=tempfile.mkdtemp(prefix="rdm-files-"), default=True)
    db.session.add(location)
    db.session.commit()
    return location


def create_rdm_indices() -> None:
    """The indices that are missing (creating existing ones again would give each alias a
    second write index)."""
    from invenio_search import current_search
    from invenio_search.proxies import current_search_client
    from invenio_search.utils import build_alias_name

    missing = [
        name
        for name in current_search.mappings
        if not current_search_client.indices.exists_alias(name=build_alias_name(name))
    ]
    list(current_search.create(index_list=missing, ignore_existing=True))


def prepare_storage() -> None:
    """What publishing needs once the tables and indices exist: a files location, the
    vocabulary entries."""
    create_default_location()
    load_vocabularies()


def count_records() -> dict[str, int]:
    """Published records (found by the service's search, as users find them), tombstones and
    open drafts: what a demo or a benchmark checks at its end."""
    from invenio_access.permissions import system_identity
    from invenio_db import db
    from invenio_rdm_records.proxies import current_rdm_records_service
    from invenio_rdm_records.records.api import RDMDraft, RDMRecord
    from invenio_search import current_search

    current_search.flush_and_refresh("rdmrecords-records")
    records, drafts = RDMRecord.model_cls, RDMDraft.model_cls
    counts = {
        "published": current_rdm_records_service.search(system_identity).total,
        "tombstones": db.session.query(records).filter(records.deletion_status == "D").count(),
        "open_drafts": db.session.query(drafts).filter(drafts.is_deleted.is_(False)).count(),
    }
    db.session.rollback()
    return counts
