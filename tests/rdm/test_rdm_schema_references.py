"""JSON Schema validation while a batch is written (``targets/schema_references``): the
site's verdicts, with the store built once and each reference of a registered schema resolved
once, against InvenioRDM's own schemas and invenio-records' real validation."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("invenio_rdm_records")

from factories import make_harvester, run_harvest
from flask import current_app
from invenio_jsonschemas.ext import InvenioJSONSchemasState
from invenio_rdm_records.records.api import RDMRecord
from jsonschema.exceptions import ValidationError

from oarepo_oaipmh_harvester.harvest.targets.schema_references import (
    schema_references_resolved_once,
)

from .conftest import RDM_TARGET, TRANSFORMER


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
