"""A first harvest into an InvenioRDM site that already holds many records (phase `rdm_grown`;
needs the `rdm` extra and `benchmarks/rdm_target.py`).

The rate of a first harvest is measured at a few thousand records; what a record costs at
the end of a 200,000-record harvest depends on what the site holds by then. Harvesting
200,000 records to find out takes hours, so the site is grown in SQL instead: copies of a
published record (parent, record, its published draft, versions state, its PIDs) and
tracking rows of the harvester, none of them in the search index (no harvest step searches
for other records). Then the same harvest runs into the empty site, the grown site, and the
grown site with the ``parent_id`` indexes the run log asks for.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from harvest_bench.phases.shared import create_harvester, read_transformed, run_harvest
from harvest_bench.settings import HARVESTER_ID, log

if TYPE_CHECKING:
    from harvest_bench.harness.worker import PhaseWorker

PARENT_ID_INDEXES = (
    "CREATE INDEX ix_rdm_records_metadata_parent_id ON rdm_records_metadata (parent_id)",
    "CREATE INDEX ix_rdm_drafts_metadata_parent_id ON rdm_drafts_metadata (parent_id)",
)
"""What ``DraftsServiceTarget.scale_warnings`` tells operators to run."""


def phase_rdm_grown(worker: PhaseWorker, params: dict[str, Any]) -> dict[str, Any]:
    """The same first harvest of N records into three sites: empty, grown to
    `params["site_records"]` records, and grown with the ``parent_id`` indexes."""
    import rdm_target

    worker.boot()
    worker.reset_storage()  # the transformer looks vocabularies up
    n, size = params["records"], params["site_records"]
    from oarepo_oaipmh_harvester.proxies import current_oai_harvester

    transformer = current_oai_harvester.transformers.get(rdm_target.TRANSFORMER)
    seed = json.loads(read_transformed(params["base_url"], 1, transformer=transformer)[0])
    seed.pop("pids", None)  # the harvest brings the same record with its DOI
    steps: dict[str, Any] = {}
    for name, grown, indexed in (
        ("empty", False, False),
        ("grown", True, False),
        ("grown_indexed", True, True),
    ):
        worker.reset_storage()
        # Warms the process up the same way before every step, and is what a grown site
        # is copied from.
        rdm_target.create_and_publish_each([json.dumps(seed)])
        create_harvester(params["base_url"], params["batch_size"], rdm=True)
        site: dict[str, Any] = {}
        if grown:
            began = time.perf_counter()
            site = grow_site(size)
            site["grow_seconds"] = round(time.perf_counter() - began, 1)
            log(f"rdm_grown: site grown to {size} records in {site['grow_seconds']} s")
        if indexed:
            run_sql(PARENT_ID_INDEXES)
        rdm_target.index_queued_documents()
        log(f"rdm_grown: full harvest of {n} records into the {name.replace('_', ' ')} site")
        with worker.step({}) as result:
            result.update(run_harvest(f"rdm_grown {name}", n))
            result["records"] = result["total_entries"]
            result["queued_documents"] = rdm_target.index_queued_documents()
        result["site"] = site
        result["stored"] = worker.stored()
        steps[name] = result
    return {"steps": steps}


def run_sql(statements: tuple[str, ...] | list[str]) -> None:
    from invenio_db import db

    for statement in statements:
        db.session.execute(db.text(statement))
    db.session.execute(db.text("ANALYZE"))
    db.session.commit()


def grow_site(size: int) -> dict[str, Any]:
    """`size` copies of the site's one published record, each with a parent, versions state,
    published draft and PIDs of its own, and as many tracking rows of the harvester; the
    tables' row counts after."""
    from invenio_db import db

    db.session.execute(
        db.text(
            "CREATE TEMPORARY TABLE ballast AS SELECT g, gen_random_uuid() AS record_id, "
            "gen_random_uuid() AS parent_id FROM generate_series(1, :size) g"
        ),
        {"size": size},
    )
    copies = {
        "rdm_parents_metadata": {"id": "b.parent_id", "version_id": "1"},
        "rdm_records_metadata": {"id": "b.record_id", "parent_id": "b.parent_id"},
        "rdm_drafts_metadata": {"id": "b.record_id", "parent_id": "b.parent_id"},
        "rdm_versions_state": {
            "parent_id": "b.parent_id",
            "latest_id": "b.record_id",
            "next_draft_id": "NULL",
        },
    }
    for table, replaced in copies.items():
        columns = _columns(table)
        values = ", ".join(replaced.get(column, f"s.{column}") for column in columns)
        db.session.execute(
            db.text(
                f"INSERT INTO {table} ({', '.join(columns)}) SELECT {values} "
                f"FROM ballast b, (SELECT * FROM {table} LIMIT 1) s"
            )
        )
    # The PIDs a published RDM record has: its recid, its parent's, a DOI, an OAI id.
    for pid_type, value, object_id in (
        ("recid", "'ballast-' || b.g", "b.record_id"),
        ("recid", "'ballast-p-' || b.g", "b.parent_id"),
        ("doi", "'10.99999/ballast.' || b.g", "b.record_id"),
        ("oai", "'oai:ballast:' || b.g", "b.record_id"),
    ):
        db.session.execute(
            db.text(
                "INSERT INTO pidstore_pid (pid_type, pid_value, pid_provider, status, "
                "object_type, object_uuid, created, updated) "
                f"SELECT '{pid_type}', {value}, NULL, 'R', 'rec', {object_id}, now(), now() "
                "FROM ballast b"
            )
        )
    db.session.execute(
        db.text(
            "INSERT INTO oai_harvested_record (harvester_id, oai_identifier, datestamp, deleted, "
            "local_pid, harvested_at, attempts, purged, adopted, linked) "
            "SELECT :harvester, 'oai:ballast:' || b.g, '2024-01-01T00:00:00Z', false, "
            "'ballast-' || b.g, now(), 0, false, false, false FROM ballast b"
        ),
        {"harvester": HARVESTER_ID},
    )
    db.session.execute(db.text("DROP TABLE ballast"))
    db.session.commit()
    run_sql([])
    rows = {
        table: db.session.execute(db.text(f"SELECT count(*) FROM {table}")).scalar()
        for table in (*copies, "pidstore_pid", "oai_harvested_record")
    }
    db.session.commit()
    return {"rows": rows}


def _columns(table: str) -> list[str]:
    """The table's columns as this InvenioRDM release defines them."""
    from invenio_db import db

    return list(
        db.session.execute(
            db.text(
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_name = :table ORDER BY ordinal_position"
            ),
            {"table": table},
        ).scalars()
    )
