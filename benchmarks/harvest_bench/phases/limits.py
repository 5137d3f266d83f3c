"""The limits our harvester is compared with: fetch (sickle), write (bulk writes), naive.

Each phase function runs inside its own worker process (harness.worker) and returns
`{"steps": {name: result}}`.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from harvest_bench.phases.shared import read_transformed
from harvest_bench.settings import log

if TYPE_CHECKING:
    from harvest_bench.harness.worker import PhaseWorker


def phase_fetch(worker: PhaseWorker, params: dict[str, Any]) -> dict[str, Any]:
    """The fetch limit: plain sickle through the token chain, then our own reader and the
    oai_dc transformer; no app, no writes."""
    from sickle import Sickle

    from oarepo_oaipmh_harvester.harvest.transformers import DublinCoreTransformer
    from oarepo_oaipmh_harvester.protocol.client import OAIClient

    steps: dict[str, Any] = {}
    with worker.step({}) as result:
        count = touched = 0
        for record in Sickle(params["base_url"]).ListRecords(metadataPrefix="oai_dc"):
            count += 1
            if record.header.identifier and record.metadata.get("title"):
                touched += 1
        result.update(records=count, touched=touched)
    steps["sickle"] = result

    with worker.step({}) as result:
        transformer = DublinCoreTransformer()
        count = fields = 0  # fields: every transformed record is touched, as sickle's are
        with OAIClient(params["base_url"]) as client:
            for record in client.list_records("oai_dc"):
                count += 1
                if not record.deleted:
                    fields += len(transformer.transform(record)["metadata"])
        result.update(records=count, requests=client.request_count)
    steps["our_reader"] = result
    return {"steps": steps}


def phase_write(worker: PhaseWorker, params: dict[str, Any]) -> dict[str, Any]:
    """The write limit: the transformed corpus through `create_or_update_many` in chunks of
    `write_chunk`, each in a unit of work, bulk indexing processed after every chunk."""
    from invenio_access.permissions import system_identity
    from invenio_db import db
    from invenio_db.uow import UnitOfWork

    worker.boot()
    worker.reset_storage()
    log("write limit: reading and transforming the corpus (not timed)")
    prepared = read_transformed(params["base_url"])
    service = worker.service()
    chunk_size = params["write_chunk"]
    errors: list[str] = []
    log(f"write limit: create_or_update_many, {len(prepared)} records in chunks of {chunk_size}")
    with worker.step({}) as result:
        elapsed = 0.0
        last_report = time.perf_counter()
        for start in range(0, len(prepared), chunk_size):
            chunk = [(None, json.loads(item)) for item in prepared[start : start + chunk_size]]
            began = time.perf_counter()  # JSON decoding above is not counted
            with UnitOfWork(db.session) as uow:
                bulk = service.create_or_update_many(system_identity, chunk, uow=uow)
                uow.commit()
            service.indexer.process_bulk_queue()
            elapsed += time.perf_counter() - began
            for item in bulk.results:
                if item.errors or item.exc:
                    errors.append(str(item.errors or item.exc))
            if time.perf_counter() - last_report > 30:
                last_report = time.perf_counter()
                done = start + len(chunk)
                log(f"write limit: {done}/{len(prepared)}, {done / elapsed:.0f} records/s")
        result.update(records=len(prepared), errors=len(errors), _seconds=elapsed)
    result["first_errors"] = errors[:3]
    result["stored"] = worker.stored()
    return {"steps": {"create_or_update_many": result}}


def phase_naive(worker: PhaseWorker, params: dict[str, Any]) -> dict[str, Any]:
    """Naive: one `service.create` per record (its own commit and index request) on the
    first `naive_sample` records."""
    from invenio_access.permissions import system_identity

    worker.boot()
    worker.reset_storage()
    prepared = read_transformed(params["base_url"], limit=params["naive_sample"])
    service = worker.service()
    log(f"naive: one service.create per record, {len(prepared)} records")
    with worker.step({}) as result:
        elapsed = 0.0
        for item in prepared:
            data = json.loads(item)
            began = time.perf_counter()
            service.create(system_identity, data)  # its own unit of work: commit + index
            elapsed += time.perf_counter() - began
        result.update(records=len(prepared), _seconds=elapsed)
    result["stored"] = worker.stored()
    return {"steps": {"create_each": result}}
