"""The repair tools over REST: a preview's report, a purge's typed confirmation."""

from __future__ import annotations

from factories import harvester_data
from invenio_access.permissions import system_identity

from oarepo_oaipmh_harvester.proxies import current_harvester_service

H = "/api/oai-harvest/harvesters"


def test_a_manager_previews_their_harvester_and_sees_the_report(
    users, login, provider, clean_index
):
    current_harvester_service.create(
        system_identity,
        harvester_data("mine", provider.base_url, harvest_managers=[users.manager.user.id]),
    )
    client = login(users.manager)

    response = client.post(f"{H}/mine/preview", json={"limit": 5})

    assert response.status_code == 200, response.json
    report = response.json
    assert report["dry_run"] and report["stopped_early"] and report["limit"] == 5
    assert report["counts"]["examined"] == 5 and report["counts"]["created"] == 5
    assert [entry["action"] for entry in report["entries"]] == ["create"] * 5
    assert client.get(f"{H}/mine").json["links"]["preview"].endswith("/mine/preview")
    # Nothing was written: the harvester still tracks no record.
    assert client.get("/api/oai-harvest/records?harvester=mine").json["hits"]["total"] == 0

    refused = client.post(f"{H}/mine/preview", json={"purge": True, "confirm": "mine"})
    assert refused.status_code == 400 and "cannot be previewed" in str(refused.json)
    too_many = client.post(f"{H}/mine/preview", json={"limit": 10001})
    assert too_many.status_code == 400


def test_a_purge_needs_the_harvesters_id_typed(users, login, provider, clean_index):
    current_harvester_service.create(system_identity, harvester_data("gone", provider.base_url))
    client = login(users.admin)

    wrong = client.post(f"{H}/gone/purge", json={"confirm": "gone-not"})

    assert wrong.status_code == 400
    assert wrong.json["errors"][0]["field"] == "confirm"
    assert "type the harvester's id (gone) to confirm it" in wrong.json["errors"][0]["messages"][0]

    started = client.post(f"{H}/gone/purge", json={"confirm": "gone", "forget": True})

    assert started.status_code == 202
    assert started.json["args"]["purge"] and started.json["args"]["forget"]
    assert started.json["status"] == "SUCCESS" and started.json["title"] == "Purge"
