"""Shared steps of the harvest scenarios."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator

import sqlalchemy as sa
from invenio_access.permissions import system_identity
from invenio_db import db
from invenio_search.proxies import current_search
from oaiharvest_test_support.sample_records.records import SampleRecord

from oarepo_oaipmh_harvester.models import OAIHarvestedRecord
from oarepo_oaipmh_harvester.testing.corpus import Corpus


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


def record_versions() -> dict:
    """Id -> version of every record in the target table (a rewrite bumps the version)."""
    model = SampleRecord.model_cls
    db.session.expire_all()
    return dict(db.session.execute(db.select(model.id, model.version_id)).all())


def indexed_total(service) -> int:
    current_search.flush_and_refresh("oaisamplerecords")
    return service.search(system_identity, size=1).total


def expected_titles(corpus: Corpus) -> dict[str, list[str]]:
    return {
        identifier: corpus.get(identifier).metadata["title"]
        for identifier in corpus.live_identifiers()
    }


@contextlib.contextmanager
def counted_search_requests() -> Iterator[Counter[tuple[str, str]]]:
    """(method, last path segment) of each request to the search cluster while the block runs."""
    from invenio_search import current_search_client

    requests: Counter[tuple[str, str]] = Counter()
    transport = current_search_client.transport
    original = transport.perform_request

    def counting(method, url, *args, **kwargs):
        requests[(method, url.split("?")[0].rsplit("/", 1)[-1])] += 1
        return original(method, url, *args, **kwargs)

    transport.perform_request = counting
    try:
        yield requests
    finally:
        transport.perform_request = original


@contextlib.contextmanager
def counted_transactions() -> Iterator[list[None]]:
    """One entry per outermost session transaction that ends while the block runs.

    Under pytest-invenio every such transaction is a savepoint of the test's own, and
    SQLAlchemy reports nested ones (pidstore's, the bulk write's) as commits too: the
    outermost ones are what a real database would see as its transactions.
    """
    ended: list[None] = []
    session = db.session()

    def end(session, transaction):
        if transaction.parent is None:
            ended.append(None)

    sa.event.listen(session, "after_transaction_end", end)
    try:
        yield ended
    finally:
        sa.event.remove(session, "after_transaction_end", end)
