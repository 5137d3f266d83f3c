"""Where an InvenioRDM record's write goes (phase `rdm_profile`, `benchmarks/profile_rdm.py`).

The same records are written twice into fresh storage: by RDM's per-record loop
(``service.create`` + ``service.publish``, `rdm_target.create_and_publish_each`) and by our
full harvest (drafts adapter, batch size `batch_size`). Both run with the labels of
`LABELS` and every service component's action wrapped (`harness.attribution`): SQL
statements per record by kind and table and by label, exclusive wall time per label. With
`cprofile_dir` each step is profiled by cProfile as well (``loop.prof``, ``harvest.prof``:
then the times include cProfile's overhead). Needs the `rdm` extra.
"""

from __future__ import annotations

import contextlib
import cProfile
import importlib
import os
from collections.abc import Iterator
from typing import Any

from harvest_bench.harness.attribution import Attribution
from harvest_bench.phases.shared import create_harvester, read_transformed, run_harvest
from harvest_bench.settings import log

# (module, attribute path, label): what is attributed to which label (exclusive of the
# labelled code it calls).
LABELS: list[tuple[str, str, str]] = [
    ("invenio_drafts_resources.services.records.service", "RecordService.create", "service.create"),
    ("invenio_drafts_resources.services.records.service", "RecordService.publish", "service.publish"),
    ("invenio_rdm_records.services.services", "RDMRecordService.publish", "service.publish"),
    ("invenio_drafts_resources.services.records.service", "RecordService.edit", "service.edit"),
    ("invenio_rdm_records.services.services", "RDMRecordService.update_draft", "service.update_draft"),
    ("invenio_records_resources.services.base.service", "Service.require_permission", "permissions"),
    ("invenio_records_resources.services.base.service", "Service.check_permission", "permissions"),
    ("invenio_records_resources.services.records.schema", "ServiceSchemaWrapper.load", "marshmallow load"),
    ("invenio_records_resources.services.records.schema", "ServiceSchemaWrapper.dump", "marshmallow dump (results)"),
    ("invenio_records.ext", "_RecordsState.validate", "JSON schema validation"),
    ("invenio_records.systemfields.relations.field", "RelationsField.pre_commit", "relations check (vocabularies)"),
    ("invenio_pidstore.models", "PersistentIdentifier.create", "PID create"),
    ("invenio_pidstore.resolver", "Resolver.resolve", "PID resolve"),
    ("sqlalchemy_continuum.unit_of_work", "UnitOfWork.process_before_flush", "Continuum versions"),
    ("sqlalchemy_continuum.unit_of_work", "UnitOfWork.process_after_flush", "Continuum versions"),
    ("sqlalchemy.orm.session", "Session.flush", "session flush"),
    ("sqlalchemy.orm.session", "Session.commit", "COMMIT"),
    ("invenio_db.uow", "UnitOfWork.commit", "unit of work commit"),
    ("oarepo_oaipmh_harvester.harvest.unit_of_work", "BulkIndexingUnitOfWork.commit", "unit of work commit"),
    ("invenio_indexer.api", "RecordIndexer.index", "indexing: per-record request"),
    ("invenio_indexer.api", "RecordIndexer._prepare_record", "indexing: document dump"),
    ("oarepo_oaipmh_harvester.harvest.unit_of_work", "BulkIndexingUnitOfWork._build_actions", "indexing: bulk actions"),
    ("oarepo_oaipmh_harvester.harvest.unit_of_work", "bulk", "indexing: bulk request"),
    ("invenio_rdm_records.services.communities.service", "RecordCommunitiesService.add", "community inclusion"),
    ("oarepo_oaipmh_harvester.harvest.targets.drafts", "DraftsServiceTarget._holder_of", "ours: DOI holder look-up"),
    ("oarepo_oaipmh_harvester.harvest.targets.drafts", "DraftsServiceTarget._is_unpublished_draft", "ours: draft state look-ups"),
    ("oarepo_oaipmh_harvester.harvest.targets.drafts", "DraftsServiceTarget._has_open_draft", "ours: draft state look-ups"),
    ("oarepo_oaipmh_harvester.harvest.writer", "RecordWriter.transform", "ours: transform"),
    ("oarepo_oaipmh_harvester.harvest.tracking", "TrackingStore.load", "ours: tracking rows"),
    ("oarepo_oaipmh_harvester.harvest.tracking", "TrackingStore.lock", "ours: tracking rows"),
    ("oarepo_oaipmh_harvester.harvest.tracking", "TrackingStore.save", "ours: tracking rows"),
    ("oarepo_oaipmh_harvester.harvest.writer", "collect_written_batch", "ours: garbage collection"),
]  # fmt: skip


def install_labels(attribution: Attribution) -> None:
    """Wrap everything of `LABELS`, and every service component's action."""
    for module_name, path, label in LABELS:
        owner: Any = importlib.import_module(module_name)
        *parents, name = path.split(".")
        for parent in parents:
            owner = getattr(owner, parent)
        attribution.wrap(owner, name, label)
    from invenio_records_resources.services.base.service import Service

    def run_components(service: Any, action: str, *args: Any, **kwargs: Any) -> None:
        uow = kwargs.pop("uow", None)  # as Service.run_components does
        for component in service.components:
            if hasattr(component, action):
                if uow is not None:
                    component.uow = uow
                attribution.push(f"component {type(component).__name__}.{action}")
                try:
                    getattr(component, action)(*args, **kwargs)
                finally:
                    attribution.pop()
                component.uow = None

    Service.run_components = run_components


@contextlib.contextmanager
def _profiled(directory: str | None, name: str) -> Iterator[None]:
    if not directory:
        yield
        return
    profile = cProfile.Profile()
    profile.enable()
    try:
        yield
    finally:
        profile.disable()
        os.makedirs(directory, exist_ok=True)
        profile.dump_stats(os.path.join(directory, f"{name}.prof"))


def phase_rdm_profile(worker: Any, params: dict[str, Any]) -> dict[str, Any]:
    """The loop and our full harvest of the same records, labelled; per-record numbers."""
    import rdm_target
    from invenio_db import db

    worker.boot()
    worker.reset_storage()
    from oarepo_oaipmh_harvester.proxies import current_oai_harvester

    transformer = current_oai_harvester.transformers.get(rdm_target.TRANSFORMER)
    prepared = read_transformed(params["base_url"], transformer=transformer)
    rdm_target.create_and_publish_each(prepared[:3])  # warm-up, wiped below
    attribution = Attribution(db.engine)
    install_labels(attribution)
    steps: dict[str, Any] = {}

    worker.reset_storage()
    log(f"rdm_profile: create + publish each of {len(prepared)} records, labelled")
    attribution.reset()
    with _profiled(params.get("cprofile_dir"), "loop"):
        _, errors = rdm_target.create_and_publish_each(prepared)
    steps["loop"] = {**attribution.snapshot(len(prepared)), "errors": errors[:3]}

    worker.reset_storage()
    create_harvester(params["base_url"], params["batch_size"], rdm=True)
    log(f"rdm_profile: our full harvest, batch size {params['batch_size']}, labelled")
    attribution.reset()
    with _profiled(params.get("cprofile_dir"), "harvest"):
        counts = run_harvest("rdm_profile", len(prepared))
    steps["harvest"] = {**attribution.snapshot(counts["total_entries"] or 0), "run": counts}
    steps["harvest"]["stored"] = worker.stored()
    return {"steps": steps}
