"""REST API of harvested records: search with filters and facets, read one, re-harvest."""

from __future__ import annotations

import pytest
from invenio_records_resources.services import ExternalLink
from oaiharvest_test_support.sample_records.service import SampleServiceConfig
from operator_helpers import path_of, track

API = "/api/oai-harvest/records"


@pytest.fixture()
def as_admin(login, users):
    return login(users.admin)


def identifiers(response) -> list[str]:
    assert response.status_code == 200, response.json
    return [hit["oai_identifier"] for hit in response.json["hits"]["hits"]]


def buckets(response, name: str) -> dict[str, int]:
    return {b["key"]: b["doc_count"] for b in response.json["aggregations"][name]["buckets"]}


def test_search_everything_with_facets(as_admin, tracked):
    res = as_admin.get(API, query_string={"sort": "identifier"})
    assert identifiers(res) == ["oai:a:1", "oai:a:2", "oai:a:3", "oai:b:1", "oai:b:2"]
    assert res.json["hits"]["total"] == 5
    assert buckets(res, "harvester") == {"a": 3, "b": 2}
    assert buckets(res, "deleted") == {"false": 4, "true": 1}
    assert buckets(res, "has_errors") == {"false": 3, "true": 2}
    harvester_facet = res.json["aggregations"]["harvester"]
    assert harvester_facet["label"] == "Harvester"
    assert {b["label"] for b in harvester_facet["buckets"]} == {"Harvester A", "Harvester B"}

    hit = res.json["hits"]["hits"][0]
    assert "original_xml" not in hit and "transformed" not in hit  # read the record for those
    assert hit["id"] == "a/oai:a:1" and hit["harvester"] == "a" and hit["local_pid"] == "abc-1"
    assert hit["links"]["self"] == "https://repo.example.org/api/oai-harvest/records/a/oai:a:1"
    assert hit["links"]["self_html"] == (
        "https://repo.example.org/administration/oai-harvested-records/a/oai:a:1"
    )


@pytest.mark.parametrize(
    "args, expected",
    [
        ({"harvester": "a"}, ["oai:a:1", "oai:a:2", "oai:a:3"]),
        ({"harvester": ["a", "b"], "deleted": "true"}, ["oai:a:3"]),
        ({"has_errors": "true"}, ["oai:a:2", "oai:b:2"]),
        ({"has_errors": "false", "harvester": "b"}, ["oai:b:1"]),
        (
            {"has_errors": ["true", "false"]},
            ["oai:a:1", "oai:a:2", "oai:a:3", "oai:b:1", "oai:b:2"],
        ),
        ({"error": "TITLE"}, ["oai:a:2"]),
        ({"error": "metadata"}, ["oai:b:2"]),
        ({"datestamp_from": "2024-02-01"}, ["oai:a:2", "oai:a:3"]),
        ({"datestamp_until": "2024-02-01T00:00:00Z"}, ["oai:a:1", "oai:b:1", "oai:b:2"]),
        ({"datestamp_from": "2024-02-01", "datestamp_until": "2024-04-01"}, ["oai:a:2"]),
        ({"q": "b:2"}, ["oai:b:2"]),
        ({"q": "abc-2"}, ["oai:b:1"]),  # the local pid
        ({"q": "*"}, ["oai:a:1", "oai:a:2", "oai:a:3", "oai:b:1", "oai:b:2"]),
    ],
)
def test_search_filters(as_admin, tracked, args, expected):
    res = as_admin.get(API, query_string={**args, "sort": "identifier"})
    assert identifiers(res) == expected


def test_facet_counts_ignore_the_facet_selection_but_not_the_other_filters(as_admin, tracked):
    res = as_admin.get(API, query_string={"harvester": "a", "error": "Validation"})
    assert identifiers(res) == ["oai:a:2"]
    # Other harvesters stay selectable; the error text narrows every facet.
    assert buckets(res, "harvester") == {"a": 1}
    res = as_admin.get(API, query_string={"harvester": "a"})
    assert buckets(res, "harvester") == {"a": 3, "b": 2}
    selected = {
        b["key"]: b["is_selected"] for b in res.json["aggregations"]["harvester"]["buckets"]
    }
    assert selected == {"a": True, "b": False}


def test_sort_and_paging(as_admin, tracked):
    track("b", "oai:b:3", harvested_at=tracked[0].harvested_at.replace(year=2025))
    res = as_admin.get(API, query_string={"size": 2})
    assert res.json["sortBy"] == "newest"
    assert identifiers(res)[0] == "oai:b:3"
    res = as_admin.get(API, query_string={"size": 2, "page": 3, "sort": "identifier"})
    assert identifiers(res) == ["oai:b:2", "oai:b:3"]
    assert "page=2" in res.json["links"]["prev"] and "next" not in res.json["links"]
    res = as_admin.get(API, query_string={"sort": "datestamp", "size": 1})
    assert identifiers(res) == ["oai:a:3"]  # "2024-05-01" is the newest datestamp


@pytest.mark.parametrize(
    "args, field",
    [
        ({"deleted": "maybe"}, "deleted"),
        ({"has_errors": "sometimes"}, "has_errors"),
        ({"datestamp_from": "last week"}, "datestamp_from"),
        ({"run": "not-a-uuid"}, "run"),
        ({"sort": "best"}, "sort"),
    ],
)
def test_bad_filters_are_400_with_the_field(as_admin, tracked, args, field):
    res = as_admin.get(API, query_string=args)
    assert res.status_code == 400
    assert field in {error["field"] for error in res.json["errors"]}


def test_records_in_conflict_with_local_edits_are_a_facet_and_say_what_stayed(as_admin, harvesters):
    """A tracking row whose last write met a local edit (issue 38: field policies)."""
    conflict = {
        "field": "metadata.subjects",
        "policy": "merge",
        "kept": "merged",
        "local": [{"subject": "Local"}],
        "source": [{"subject": "Source"}],
    }
    track("a", "oai:a:1", local_pid="abc-1", conflicts=[conflict])
    track("a", "oai:a:2", local_pid="abc-2")
    res = as_admin.get(API, query_string={"has_conflicts": "true"})
    assert identifiers(res) == ["oai:a:1"]
    assert buckets(res, "has_conflicts") == {"true": 1, "false": 1}
    assert res.json["aggregations"]["has_conflicts"]["label"] == "With conflicts"
    assert res.json["hits"]["hits"][0]["has_conflicts"] is True
    one = as_admin.get(f"{API}/a/oai:a:1").json
    assert one["conflicts"] == [conflict]
    assert one["conflicts_text"] == (
        "metadata.subjects: changed locally and at the source; merge kept the merged value"
    )
    assert identifiers(as_admin.get(API, query_string={"has_conflicts": "false"})) == ["oai:a:2"]


def test_read_one_with_xml_transformed_data_errors_and_links(as_admin, tracked):
    res = as_admin.get(f"{API}/a/oai:a:1")
    assert res.status_code == 200
    data = res.json
    assert data["original_xml"].startswith("<record><header><identifier>oai:a:1")
    assert data["transformed"] == {"metadata": {"title": ["One"]}}
    assert data["errors"] == [] and data["has_errors"] is False and data["deleted"] is False
    links = data["links"]
    assert links["harvester"] == "https://repo.example.org/api/oai-harvest/harvesters/a"
    assert links["reharvest"].endswith("/api/oai-harvest/records/a/oai:a:1/reharvest")
    # The sample target service has no links of its own: the best-effort API URL.
    assert links["local_record"] == "https://repo.example.org/api/oai-sample-records/abc-1"
    assert "run" not in links and "local_record_html" not in links

    failed = as_admin.get(f"{API}/a/oai:a:2").json
    assert failed["errors"] == ["Validation failed: title"] and failed["has_errors"] is True
    assert "local_record" not in failed["links"]


def test_local_record_links_come_from_the_target_service_or_configuration(
    as_admin, users, harvesters, set_config, monkeypatch
):
    run = as_admin.post("/api/oai-harvest/harvesters/a/run").json
    hit = as_admin.get(API, query_string={"harvester": "a", "size": 1}).json["hits"]["hits"][0]
    record = as_admin.get(path_of(hit["links"]["self"])).json
    pid = record["local_pid"]
    assert record["run_id"] == run["id"]
    assert record["links"]["run"].endswith(f"/api/oai-harvest/harvesters/a/runs/{run['id']}")
    assert (
        record["links"]["run_html"] == f"https://repo.example.org/administration/runs/{run['id']}"
    )
    assert "<oai_dc:dc" in record["original_xml"] and record["transformed"]["metadata"]["title"]

    set_config(
        OAI_HARVESTER_LOCAL_RECORD_URLS={
            "oai-sample-records": {"self_html": "{ui}/samples/{pid}", "self": "{api}/samples/{pid}"}
        }
    )
    record = as_admin.get(path_of(hit["links"]["self"])).json
    assert record["links"]["local_record"] == f"https://repo.example.org/api/samples/{pid}"
    assert record["links"]["local_record_html"] == f"https://repo.example.org/samples/{pid}"

    # A target service with links of its own is asked (it knows its URLs best).
    monkeypatch.setattr(
        SampleServiceConfig,
        "links_item",
        {
            "self": ExternalLink(
                "https://target.example.org/{id}", vars=lambda r, v: v.update(id=r.pid.pid_value)
            )
        },
    )
    record = as_admin.get(path_of(hit["links"]["self"])).json
    assert record["links"]["local_record"] == f"https://target.example.org/{pid}"


def test_identifiers_with_slashes_and_unknown_ones(as_admin, harvesters):
    track("a", "oai:example.org:path/with/slashes")
    res = as_admin.get(f"{API}/a/oai:example.org:path/with/slashes")
    assert (
        res.status_code == 200 and res.json["oai_identifier"] == "oai:example.org:path/with/slashes"
    )
    res = as_admin.get(f"{API}/a/oai:nope")
    assert res.status_code == 404
    assert res.json["message"] == "Harvester 'a' has no record with OAI identifier 'oai:nope'."
    assert as_admin.get(f"{API}/nope/oai:a:1").status_code == 404


def test_reharvest_runs_get_record_for_that_identifier(as_admin, harvesters, corpus, provider):
    wanted = sorted(corpus.live_identifiers())[5]
    track("a", wanted, errors=["Validation failed: earlier"])

    res = as_admin.post(f"{API}/a/{wanted}/reharvest")
    assert res.status_code == 202, res.json
    assert res.json["status"] == "SUCCESS" and res.json["args"]["identifiers"] == [wanted]
    assert res.json["title"] == f"Re-harvest {wanted}"
    assert [r["identifier"] for r in provider.requests_for("GetRecord")] == [wanted]
    record = as_admin.get(f"{API}/a/{wanted}").json
    assert record["errors"] == [] and record["local_pid"] and record["run_id"] == res.json["id"]

    assert as_admin.post(f"{API}/a/oai:untracked/reharvest").status_code == 404
