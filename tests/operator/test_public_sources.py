"""The public page of harvested sources (/about/harvest): off unless the site turns it on;
then readable without login, with names, record counts and last harvests - no endpoint, no
credentials."""

from __future__ import annotations

from invenio_access.permissions import system_identity
from lxml import html

from oarepo_oaipmh_harvester.proxies import current_harvest_runs_service, current_harvester_service


def test_the_page_is_off_unless_the_site_turns_it_on(client, harvesters):
    assert client.get("/about/harvest").status_code == 404


def test_anybody_sees_the_sources_but_nothing_private(client, harvesters, set_config, corpus):
    set_config(OAI_HARVESTER_PUBLIC_SOURCES_PAGE=True)
    current_harvester_service.update(
        system_identity, "b", {"headers": {"X-Api-Key": "secret-token"}}, check=False
    )
    run = current_harvest_runs_service.start_run(system_identity, "a")
    assert run.data["status"] == "SUCCESS"

    response = client.get("/about/harvest")  # nobody logged in
    assert response.status_code == 200
    text = response.get_data(as_text=True)
    rows = html.fromstring(text).xpath('//*[@id="harvested-sources"]//tbody/tr')
    cells = [[" ".join(cell.text_content().split()) for cell in row] for row in rows]
    assert [row[:2] for row in cells] == [["Harvester A", "50"], ["Harvester B", "0"]]
    assert cells[0][2].endswith("UTC") and cells[1][2] == "not yet"
    assert "127.0.0.1" not in text and "secret-token" not in text and "/oai" not in text
