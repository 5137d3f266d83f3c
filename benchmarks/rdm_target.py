"""The benchmark's InvenioRDM target (phases `rdm` and `rdm_workers`; needs the `rdm` extra).

InvenioRDM's own records service (invenio-rdm-records, draft-enabled) booted as
``oarepo_oaipmh_harvester.testing.rdm`` boots it for the tests and the demo, with the
``oai_dc_rdm`` transformer, external DOIs and the few real vocabulary entries it maps to.
Everything RDM is imported inside the functions: the other phases run without the extra.
"""

from __future__ import annotations

import json
import time
from typing import Any

TARGET = "records"
TRANSFORMER = "oai_dc_rdm"
CELERY_APP = "oarepo_oaipmh_harvester.testing.rdm_celery"


def overrides() -> dict[str, Any]:
    """RDM's configuration keys (passed in code: Celery workers get them from CELERY_APP)."""
    from oarepo_oaipmh_harvester.testing.rdm import rdm_config

    return rdm_config(external_dois=True)


def prepare_app(app) -> None:
    from oarepo_oaipmh_harvester.testing.rdm import (
        quiet_missing_statistics,
        register_ui_stand_ins,
    )

    register_ui_stand_ins(app)
    quiet_missing_statistics(app)


def prepare_storage() -> None:
    """After the schema and the indices were recreated: a files location, the vocabularies."""
    from oarepo_oaipmh_harvester.testing.rdm import prepare_storage

    prepare_storage()


def read_transformed(base_url: str) -> list[str]:
    """The provider's live records through the harvester's own `oai_dc_rdm`, as JSON."""
    from oarepo_oaipmh_harvester.protocol.client import OAIClient
    from oarepo_oaipmh_harvester.proxies import current_oai_harvester

    transformer = current_oai_harvester.transformers.get(TRANSFORMER)
    out: list[str] = []
    with OAIClient(base_url) as client:
        for record in client.list_records("oai_dc"):
            if not record.deleted:
                out.append(json.dumps(transformer.transform(record)))
    return out


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


def stored() -> dict[str, int]:
    """Published records (by the service's search), tombstones, open drafts."""
    from oarepo_oaipmh_harvester.testing.rdm import count_records

    return count_records()
