"""What the RDM test modules share: the tracking rows, the published records, open drafts."""

from __future__ import annotations

from typing import Any

from factories import run_harvest
from invenio_access.permissions import system_identity
from invenio_db import db
from invenio_search.proxies import current_search, current_search_client
from invenio_search.utils import build_alias_name

from oarepo_oaipmh_harvester.harvest.window import SinceSource
from oarepo_oaipmh_harvester.models import OAIHarvestedRecord


def tracking(harvester_id: str = "test") -> dict[str, OAIHarvestedRecord]:
    """The harvester's tracking rows as they are committed now."""
    db.session.expire_all()
    rows = db.session.scalars(
        db.select(OAIHarvestedRecord).where(OAIHarvestedRecord.harvester_id == harvester_id)
    )
    return {row.oai_identifier: row for row in rows}


def published_titles(service: Any) -> dict[str, str]:
    """pid -> title of every published record the search finds."""
    from invenio_rdm_records.records.api import RDMRecord

    current_search.flush_and_refresh(RDMRecord.index._name)
    result = service.search(system_identity, size=100)
    return {hit["id"]: hit["metadata"]["title"] for hit in result.hits}


def open_drafts() -> int:
    """Drafts in the database that are not soft-deleted (publishing soft-deletes ours), and
    the same count in the drafts index (a published draft's document is removed)."""
    from invenio_rdm_records.records.api import RDMDraft

    model = RDMDraft.model_cls
    in_database = db.session.query(model).filter(model.is_deleted.is_(False)).count()
    current_search.flush_and_refresh(RDMDraft.index._name)
    indexed = current_search_client.count(index=build_alias_name(RDMDraft.index._name))["count"]
    assert indexed == in_database
    return in_database


def harvest_again(corpus: Any, **arguments: Any):
    """An hour later, an incremental run from the watermark."""
    corpus.advance_clock(hours=1)
    return run_harvest("test", since_source=SinceSource.WATERMARK, **arguments)


def minimal_record(
    title: str, *, family_name: str = "Novák", publication_date: str = "2020-06"
) -> dict[str, Any]:
    """The data of a public, metadata-only RDM record with one creator."""
    return {
        "access": {"record": "public", "files": "public"},
        "files": {"enabled": False},
        "metadata": {
            "resource_type": {"id": "publication"},
            "creators": [{"person_or_org": {"type": "personal", "family_name": family_name}}],
            "title": title,
            "publication_date": publication_date,
        },
    }
