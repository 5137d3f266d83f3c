"""What matching new records by their identifiers costs (phase `matching`, issue 38: match_on):
a full harvest into InvenioRDM of records that carry a Handle besides their DOI and URL, on
fresh storage each time - without matching (``match_on`` empty), with the default schemes and
no index on the records' identifiers (what a site has until it follows the run log's hint),
and with that index."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_bench.harness.provider import provider_command
from harvest_bench.phases.shared import create_harvester, run_harvest
from harvest_bench.settings import log

if TYPE_CHECKING:
    from harvest_bench.harness.worker import PhaseWorker

PASSES = (
    ("off", [], False),
    ("on", None, False),
    ("on_indexed", None, True),
)
"""(label, match_on - None: the site's OAI_HARVESTER_MATCH_ON -, the identifiers index made)."""


def phase_matching(worker: PhaseWorker, params: dict[str, Any]) -> dict[str, Any]:
    import rdm_target

    worker.boot()
    n = params["records"]
    given = provider_command(params["provider_address"], "handles")
    log(f"matching: {given['records']} records carry a Handle now")
    steps: dict[str, Any] = {}
    for label, match_on, indexed in PASSES:
        worker.reset_storage()
        if indexed:
            _index_identifiers()
        options = {} if match_on is None else {"match_on": match_on}
        create_harvester(params["base_url"], params["batch_size"], rdm=True, **options)
        log(f"matching {label}: full harvest of {n} records into InvenioRDM")
        with worker.step({}) as result:
            result.update(run_harvest(f"matching {label} full", n))
            result["records"] = result["total_entries"]
            result["queued_documents"] = rdm_target.index_queued_documents()
        result["stored"] = worker.stored()
        steps[f"full_{label}"] = result
    steps["summary"] = _summary(steps)
    return {"steps": steps}


def _index_identifiers() -> None:
    """The index the run log names (without CONCURRENTLY: no transaction is open here)."""
    import sqlalchemy as sa
    from invenio_db import db
    from invenio_rdm_records.records.models import RDMRecordMetadata

    from oarepo_oaipmh_harvester.harvest.targets.matching import identifiers_index

    statement = identifiers_index(RDMRecordMetadata.__table__.name)
    db.session.execute(sa.text(statement.replace(" CONCURRENTLY", "")))
    db.session.commit()


def _summary(steps: dict[str, Any]) -> dict[str, Any]:
    def per_record(name: str) -> float:
        step = steps[name]
        return step["seconds"] / max(step["records"], 1)

    return {
        "on_over_off": per_record("full_on") / per_record("full_off"),
        "on_indexed_over_off": per_record("full_on_indexed") / per_record("full_off"),
        "ms_per_record": {label: 1000 * per_record(f"full_{label}") for label, _, _ in PASSES},
        "sql_per_record": {
            label: steps[f"full_{label}"].get("sql_per_record") for label, _, _ in PASSES
        },
    }
