"""Matching a new harvested record to a local twin by identifiers besides the DOI (issue 38,
point 2), on InvenioRDM's records service: a Handle finds the local record that carries it (no
DOI needed), two candidates fail with both named, records another harvester tracks are never
candidates, the harvester's match_on decides the schemes and their order."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("invenio_rdm_records")

from factories import make_harvester, run_harvest
from invenio_access.permissions import system_identity

from oarepo_oaipmh_harvester.protocol.records import OAIRecord
from oarepo_oaipmh_harvester.proxies import current_harvester_service

from .conftest import RDM_TARGET
from .helpers import minimal_record, tracking
from .transform import MinimalRDMTransformer

TRANSFORMER = "rdm_minimal_identifiers"
SCHEMES = {"hdl:": "handle", "arXiv:": "arxiv"}


class IdentifiersTransformer(MinimalRDMTransformer):
    """The minimal transformer, with dc:identifier ``hdl:...`` and ``arXiv:...`` values as the
    record's identifiers (scheme prefix dropped, as RDM stores them)."""

    def transform(self, record: OAIRecord) -> dict[str, Any]:
        data = super().transform(record)
        identifiers = []
        for element in record.metadata:
            text = (element.text or "").strip()
            for prefix, scheme in SCHEMES.items():
                if element.tag.endswith("}identifier") and text.startswith(prefix):
                    identifiers.append({"scheme": scheme, "identifier": text[len(prefix) :]})
        if identifiers:
            data["metadata"]["identifiers"] = identifiers
        return data


@pytest.fixture(scope="module")
def app_config(app_config):
    app_config["OAI_HARVESTER_TRANSFORMERS"] = {
        **app_config["OAI_HARVESTER_TRANSFORMERS"],
        TRANSFORMER: IdentifiersTransformer,
    }
    return app_config


def local_record(rdm, title: str, identifiers: list[dict[str, str]]) -> str:
    """A record made in this repository (no harvester tracks it), published; its pid."""
    data = minimal_record(title)
    data["metadata"]["identifiers"] = identifiers
    draft = rdm.create(system_identity, data)
    return rdm.publish(system_identity, draft.id).id


def harvester(provider, **options) -> None:
    make_harvester(provider.base_url, target=RDM_TARGET, transformer=TRANSFORMER, **options)


def add_source(corpus, name: str, identifiers: list[str]) -> str:
    identifier = f"oai:source.example.org:{name}"
    corpus.add(
        identifier,
        {
            "title": [f"Harvested {name}"],
            "creator": ["Nová, Jana"],
            "date": ["2021"],
            "identifier": identifiers,
        },
    )
    return identifier


def test_a_record_with_a_handle_and_no_doi_is_taken_over_by_its_local_twin(rdm, provider, corpus):
    twin = local_record(rdm, "Made here", [{"scheme": "handle", "identifier": "11025/42"}])
    identifier = add_source(corpus, "h", ["hdl:11025/42"])
    harvester(provider, doi_conflicts="take-over")

    summary = run_harvest("test")

    assert summary.counts.failed == 0
    row = tracking()[identifier]
    assert row.local_pid == twin and row.adopted
    assert rdm.read(system_identity, twin).data["metadata"]["title"] == "Harvested h"
    assert any(
        f"Took over local record {twin}, which has handle 11025/42 (doi_conflicts take-over)"
        in text
        for _, text in summary.counts.notices
    )


def test_a_match_without_take_over_fails_naming_the_local_record(rdm, provider, corpus):
    twin = local_record(rdm, "Made here", [{"scheme": "arxiv", "identifier": "2101.00001"}])
    identifier = add_source(corpus, "a", ["arXiv:2101.00001"])
    harvester(provider)  # doi_conflicts fail, the default

    summary = run_harvest("test")

    assert summary.counts.failed == 1
    (error,) = tracking()[identifier].errors
    assert f"same work as local record {twin}, which has arxiv arXiv:2101.00001" in error
    assert rdm.read(system_identity, twin).data["metadata"]["title"] == "Made here"
    assert tracking()[identifier].local_pid is None


def test_two_candidates_fail_with_both_named_and_nothing_is_written(rdm, provider, corpus):
    first = local_record(rdm, "One", [{"scheme": "handle", "identifier": "11025/7"}])
    second = local_record(rdm, "Two", [{"scheme": "handle", "identifier": "11025/7"}])
    identifier = add_source(corpus, "two", ["hdl:11025/7"])
    harvester(provider, doi_conflicts="take-over")

    summary = run_harvest("test")

    assert summary.counts.failed == 1 and summary.counts.created == 6  # the corpus' others
    (error,) = tracking()[identifier].errors
    assert f"2 local records have handle 11025/7: {', '.join(sorted([first, second]))}" in error
    for pid, title in ((first, "One"), (second, "Two")):
        assert rdm.read(system_identity, pid).data["metadata"]["title"] == title


def test_match_on_decides_the_schemes_and_tracked_records_are_never_twins(rdm, provider, corpus):
    made_here = local_record(rdm, "Made here", [{"scheme": "handle", "identifier": "11025/9"}])
    identifier = add_source(corpus, "n", ["hdl:11025/9"])
    harvester(provider, doi_conflicts="take-over", match_on=["doi", "arxiv"])
    assert current_harvester_service.read(system_identity, "test").data["match_on"] == [
        "doi",
        "arxiv",
    ]

    summary = run_harvest("test")

    assert summary.counts.created == 7  # handles are not matched on: a record of its own
    harvested = tracking()[identifier].local_pid
    # A second harvester of the same source: the first one's record is not a twin.
    make_harvester(
        provider.base_url,
        harvester_id="second",
        target=RDM_TARGET,
        transformer=TRANSFORMER,
        doi_conflicts="take-over",
        match_on=["handle"],
    )
    second = run_harvest("second")
    # Two records carry the handle; only the one made here is a candidate, and is taken over.
    assert (second.counts.failed, second.counts.updated) == (0, 1)
    assert tracking("second")[identifier].local_pid == made_here != harvested


def test_without_the_identifiers_index_the_run_says_how_to_create_it_and_it_serves_the_lookup(
    app, rdm, provider, corpus
):
    import sqlalchemy as sa
    from invenio_db import db
    from invenio_rdm_records.records.models import RDMRecordMetadata

    from oarepo_oaipmh_harvester.harvest.assembly import make_writer
    from oarepo_oaipmh_harvester.harvest.targets.matching import LocalTwins, identifiers_index

    harvester(provider)
    statement = identifiers_index("rdm_records_metadata")
    # Said in the run's log at the start of each run, with the other scale warnings.
    warnings = make_writer("test", None).target.scale_warnings()
    assert any(statement in warning for warning in warnings), warnings

    with db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.execute(sa.text(statement))
    try:
        twins = LocalTwins(RDMRecordMetadata, ["handle"])
        assert twins.scale_warnings() == []
        sent = []

        def keep(conn, cursor, statement, parameters, context, executemany):
            if "@>" in statement:
                sent.append((statement, parameters))

        # The look-up exactly as it is sent (its bound JSON included), explained.
        sa.event.listen(db.engine, "before_cursor_execute", keep)
        try:
            twins._carrying("handle", "11025/42")
        finally:
            sa.event.remove(db.engine, "before_cursor_execute", keep)
        (statement, parameters), *_ = sent
        db.session.execute(sa.text("SET LOCAL enable_seqscan = off"))
        cursor = db.session.connection().connection.cursor()
        cursor.execute("EXPLAIN " + statement, parameters)
        plan = "\n".join(row[0] for row in cursor.fetchall())
        assert "ix_rdm_records_metadata_identifiers" in plan, plan
    finally:
        db.session.rollback()
        with db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.execute(sa.text("DROP INDEX ix_rdm_records_metadata_identifiers"))
