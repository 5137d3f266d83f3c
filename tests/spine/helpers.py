"""Shared steps of the harvest scenarios."""

from __future__ import annotations

from invenio_access.permissions import system_identity
from invenio_db import db
from invenio_search.proxies import current_search

from oarepo_oaipmh_harvester.models import OAIHarvestedRecord
from oarepo_oaipmh_harvester.testing.corpus import Corpus
from oarepo_oaipmh_harvester.testing.sample_records.records import SampleRecord


def tracking(harvester_id: str = "test") -> dict[str, OAIHarvestedRecord]:
    rows = db.session.scalars(
        db.select(OAIHarvestedRecord).where(OAIHarvestedRecord.harvester_id == harvester_id)
    )
    return {row.oai_identifier: row for row in rows}


def local_titles(service, harvester_id: str = "test") -> dict[str, list[str]]:
    """OAI identifier -> title of the live local record created from it (read via the service)."""
    titles = {}
    for identifier, row in tracking(harvester_id).items():
        if row.local_pid:
            item = service.read(system_identity, row.local_pid)
            titles[identifier] = item.data["metadata"]["title"]
    return titles


def live_local_count() -> int:
    """Records in the target table that are not deleted (to catch duplicates)."""
    model = SampleRecord.model_cls
    return db.session.query(model).filter(model.json.is_not(None)).count()


def indexed_total(service) -> int:
    current_search.flush_and_refresh("oaisamplerecords")
    return service.search(system_identity, size=1).total


def expected_titles(corpus: Corpus) -> dict[str, list[str]]:
    return {
        identifier: corpus.get(identifier).metadata["title"]
        for identifier in corpus.live_identifiers()
    }
