"""What the records of a batch look up the same way, resolved once while it is written
(``targets/schema_references``, ``targets/vocabulary_relations``): the site's verdicts, with
the JSON Schema store built once, each reference of a registered schema and each vocabulary
entry resolved once, against InvenioRDM's own schemas, vocabularies and service."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("invenio_rdm_records")

import sqlalchemy as sa
from factories import make_harvester, run_harvest
from flask import current_app
from invenio_access.permissions import system_identity
from invenio_db import db
from invenio_jsonschemas.ext import InvenioJSONSchemasState
from invenio_rdm_records.records.api import RDMRecord
from invenio_records_resources.records.systemfields.relations import PIDRelation
from jsonschema.exceptions import ValidationError

from oarepo_oaipmh_harvester.harvest.targets import lookups_shared_by_a_batch
from oarepo_oaipmh_harvester.harvest.targets.schema_references import (
    schema_references_resolved_once,
)

from .conftest import RDM_TARGET, TRANSFORMER
from .helpers import minimal_record


def _state() -> Any:
    return current_app.extensions["invenio-records"]


def _verdict(document: dict[str, Any]) -> tuple[str, list] | None:
    """What invenio-records says of `document` against the RDM record schema."""
    try:
        _state().validate(document, RDMRecord.schema.value)
    except ValidationError as error:
        return error.message, list(error.absolute_path)
    return None


DOCUMENTS = [
    {"metadata": {"title": "A title", "creators": [{"person_or_org": {"type": "personal"}}]}},
    {"metadata": {"title": 5}},
    # Wrong inside a definition the record schema refers to (a fragment of another document).
    {"metadata": {"creators": [{"person_or_org": {"type": "personal", "family_name": 7}}]}},
    {"pids": {"doi": {"identifier": ["10.1/x"], "provider": "external"}}},
]


@pytest.fixture()
def counted(monkeypatch) -> dict[str, int]:
    """How often the store of registered schemas is built and a fragment is looked up."""
    calls = {"store": 0, "fragment": 0}
    build_store = InvenioJSONSchemasState.refresolver_store
    resolver_cls = _state().refresolver_cls
    resolve_fragment = resolver_cls.resolve_fragment

    def counting_store(self):
        calls["store"] += 1
        return build_store(self)

    def counting_fragment(self, document, fragment):
        calls["fragment"] += 1
        return resolve_fragment(self, document, fragment)

    monkeypatch.setattr(InvenioJSONSchemasState, "refresolver_store", counting_store)
    monkeypatch.setattr(resolver_cls, "resolve_fragment", counting_fragment)
    return calls


def test_the_site_validates_with_registered_schemas_here(app):
    from invenio_jsonschemas.proxies import current_refresolver_store

    # What the module relies on: InvenioRDM's configuration, as the test app has it.
    assert _state().refresolver_store is current_refresolver_store


def test_validations_in_the_block_give_the_sites_verdicts(app):
    outside = [_verdict(document) for document in DOCUMENTS]
    with schema_references_resolved_once():
        inside = [_verdict(document) for document in DOCUMENTS]
        again = [_verdict(document) for document in DOCUMENTS]
    assert outside[0] is None and all(verdict is not None for verdict in outside[1:])
    assert inside == outside and again == outside


def test_the_store_is_built_once_and_references_resolved_once(app, counted):
    _verdict(DOCUMENTS[2])
    _verdict(DOCUMENTS[2])
    # The site's way: the store again at each look-up, every fragment again each time.
    assert counted["store"] > 10 and counted["fragment"] > 2
    counted.update(store=0, fragment=0)

    with schema_references_resolved_once():
        _verdict(DOCUMENTS[2])
        fragments_first = counted["fragment"]
        for document in DOCUMENTS:
            _verdict(document)
    assert counted["store"] == 1
    assert fragments_first > 0
    # The other documents need references the first one did not (the DOI's definition).
    assert counted["fragment"] - fragments_first < fragments_first

    counted.update(fragment=0)
    with schema_references_resolved_once():
        _verdict(DOCUMENTS[2])
        _verdict(DOCUMENTS[2])
    assert counted["fragment"] == fragments_first  # a new block shares nothing of an old one


def test_the_sites_resolver_is_back_after_the_last_block(app):
    site_class, site_store = _state().refresolver_cls, _state().refresolver_store
    with schema_references_resolved_once():
        sharing = _state().refresolver_cls
        assert isinstance(_state().refresolver_store, dict)
        with schema_references_resolved_once():
            assert _state().refresolver_cls is sharing
        assert _state().refresolver_cls is sharing
    assert sharing is not site_class and issubclass(sharing, site_class)
    assert _state().refresolver_cls is site_class and _state().refresolver_store is site_store

    with pytest.raises(RuntimeError), schema_references_resolved_once():
        raise RuntimeError("a failed batch")
    assert _state().refresolver_cls is site_class and _state().refresolver_store is site_store


def test_another_store_is_left_alone(app, monkeypatch):
    monkeypatch.setattr(_state(), "refresolver_store", {})
    site_class = _state().refresolver_cls
    with schema_references_resolved_once():
        assert _state().refresolver_cls is site_class


def test_a_harvest_builds_the_store_once_a_batch(rdm, provider, corpus, counted):
    make_harvester(provider.base_url, target=RDM_TARGET, transformer=TRANSFORMER, batch_size=4)
    summary = run_harvest("test")
    assert summary.succeeded and summary.counts.created == 6
    # Two batches (4 + 2), each validating its records, drafts and parents several times.
    assert counted["store"] == 2


# -- vocabulary entries ----------------------------------------------------------------------
@pytest.fixture()
def vocabulary_reads(app) -> list[str]:
    """The SQL statements that read vocabulary entries (a listener on the real engine)."""
    statements: list[str] = []

    def seen(conn, cursor, statement, parameters, context, executemany):
        if "FROM vocabularies_metadata" in statement:
            statements.append(statement)

    sa.event.listen(db.engine, "before_cursor_execute", seen)
    yield statements
    sa.event.remove(db.engine, "before_cursor_execute", seen)


def test_a_batch_resolves_each_vocabulary_entry_once(rdm, provider, corpus, vocabulary_reads):
    make_harvester(provider.base_url, target=RDM_TARGET, transformer=TRANSFORMER, batch_size=6)
    summary = run_harvest("test")
    assert summary.succeeded and summary.counts.created == 6
    # One batch of six records naming one resource type: read once, not for each record's
    # draft commit, record commit and dereferencing (24 reads before).
    assert len(vocabulary_reads) <= 2  # the draft's and the record's relation fields


def test_shared_entries_give_the_sites_verdicts(rdm, vocabulary_reads):
    unknown = minimal_record("Of an unknown type")
    unknown["metadata"]["resource_type"] = {"id": "no-such-type"}

    def verdict(data):
        try:
            return rdm.create(system_identity, data)
        except Exception as error:  # noqa: BLE001 - the site's refusal is the verdict
            return f"{type(error).__name__}: {error}"

    outside = verdict(unknown)
    site_resolve = PIDRelation.resolve
    with lookups_shared_by_a_batch():
        assert PIDRelation.resolve is not site_resolve  # the shared resolver is in place
        first, second = verdict(minimal_record("First")), verdict(minimal_record("Second"))
        inside = verdict(unknown)
    assert PIDRelation.resolve is site_resolve
    assert outside == inside == "InvalidRelationValue: Invalid value no-such-type."
    assert not first.errors and not second.errors
    # The shared entry is the site's: dereferenced the same into both drafts.
    assert first.data["metadata"]["resource_type"] == second.data["metadata"]["resource_type"]
    assert first.data["metadata"]["resource_type"].get("title")
