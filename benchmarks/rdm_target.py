"""The benchmark's InvenioRDM target (phases `rdm` and `rdm_workers`; needs the `rdm` extra).

InvenioRDM's own records service (invenio-rdm-records, draft-enabled) booted as
``oaiharvest_test_support.rdm`` boots it for the tests and the demo, with the
``oai_dc_rdm`` transformer, external DOIs and the few real vocabulary entries it maps to.
Everything RDM is imported inside the functions: the other phases run without the extra.
"""

from __future__ import annotations

import json
import time
from typing import Any

TARGET = "records"
TRANSFORMER = "oai_dc_rdm"
CELERY_APP = "oaiharvest_test_support.rdm_celery"


def overrides(*, osmem: bool = False) -> dict[str, Any]:
    """RDM's configuration keys (passed in code: Celery workers get them from CELERY_APP).

    `osmem`: the run searches on osmem-server (``--search osmem``), which lacks a facet of
    RDM's that no harvest asks for.
    """
    from oaiharvest_test_support.rdm import rdm_config

    return rdm_config(external_dois=True, osmem=osmem)


def create_and_publish_each(prepared: list[str]) -> tuple[float, list[str]]:
    """What a script without the harvester does: create a draft, publish it, one by one.

    Returns the seconds spent in the service (JSON decoding is not counted) and the errors.
    """
    from invenio_access.permissions import system_identity
    from invenio_rdm_records.proxies import current_rdm_records_service as service

    elapsed = 0.0
    errors: list[str] = []
    for item in prepared:
        data = json.loads(item)
        began = time.perf_counter()
        try:
            draft = service.create(system_identity, data)
            service.publish(system_identity, draft.id)
        except Exception as error:  # noqa: BLE001 - counted and shown in the report
            errors.append(f"{type(error).__name__}: {error}")
        elapsed += time.perf_counter() - began
    return elapsed, errors


def index_queued_documents() -> int:
    """What a site's beat task (invenio-records-resources' ``manage_indexer_queues``, every
    few seconds) has its workers do: index the records whose ids the services put in the
    indexers' queues (publishing queues every version of the record for a second
    indexing). Returns how many documents that indexed."""
    from invenio_indexer.proxies import current_indexer_registry

    documents = 0
    for indexer in current_indexer_registry.all().values():
        while True:
            indexed, failed = indexer.process_bulk_queue()
            if not indexed + failed:
                break
            documents += indexed + failed
    return documents
