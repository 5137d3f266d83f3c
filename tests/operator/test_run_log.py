"""The log on a run's page in Administration → Jobs: what a harvest says there.

invenio-jobs indexes what the application logger receives during a run into its job-logs
data stream (a real one on the session's OpenSearch node), and the run page reads it back
from ``/api/logs/jobs?q=<run id>``, as asked here by an administrator of the site.
"""

from __future__ import annotations

import pytest
from invenio_access.models import ActionRoles
from invenio_search import current_search_client
from invenio_search.utils import prefix_index

API = "/api/oai-harvest/harvesters"


@pytest.fixture()
def site_admin(app, db, users, login):
    """An administrator as InvenioRDM makes one: the role has superuser-access too, which
    invenio-jobs asks of whoever reads job logs."""
    from invenio_accounts.proxies import current_datastore

    role = current_datastore.find_role("administrators")
    db.session.add(ActionRoles(action="superuser-access", role=role))
    db.session.commit()
    return login(users.admin)


def run_log(client, run_id: str) -> list[str]:
    current_search_client.indices.refresh(index=prefix_index("job-logs"))
    response = client.get("/api/logs/jobs", query_string={"q": run_id, "size": 500})
    assert response.status_code == 200, response.json
    return [hit["message"] for hit in response.json["hits"]["hits"]]


def test_a_runs_log_has_its_window_failures_by_reason_and_end_not_a_line_per_record(
    site_admin, harvesters, corpus, set_config
):
    set_config(OAI_HARVESTER_RUN_LOG_INTERVAL=3600.0)  # one progress line: the first batch's
    untitled = sorted(corpus.live_identifiers())[:4]
    for identifier in untitled:
        record = corpus.get(identifier)
        corpus.update(identifier, metadata={"creator": ["No title"]}, datestamp=record.datestamp)
    site_admin.put(f"{API}/a", json={"batch_size": 5})

    run = site_admin.post(f"{API}/a/run").json
    assert run["status"] == "PARTIAL_SUCCESS", run["message"]
    lines = [line for line in run_log(site_admin, run["id"]) if "Harvester a:" in line]

    assert lines[0].startswith("Harvester a: the whole repository of http://127.0.0.1:")
    assert "window from=(start) until=" in lines[0]
    # The four untitled records are in the first batch: one line, one reason, three named.
    reason = "4 × Validation failed: {'metadata': ['A record needs a non-empty title.']}"
    assert lines[1].startswith(f"Harvester a: batch 1: 4 of 5 failed: {reason} (oai:")
    assert lines[1].count("oai:") == 3 and lines[1].endswith(", ...)")
    assert lines[2] == (
        "Harvester a: 5 of about 50 records after 1 batches "
        "(created 1, updated 0, deleted 0, unchanged 0, failed 4)"
    )
    assert lines[3].startswith(
        "Harvester a: partial success: 50 records "
        f"(created 46, updated 0, deleted 0, unchanged 0, failed 4); {reason} (oai:"
    )
    assert len(lines) == 4  # window, failures, progress, end: for 50 records in 10 batches
