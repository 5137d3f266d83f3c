"""The administration panel: pages render for administrators, with the API calls they make."""

from __future__ import annotations

import json
import re

import pytest
from factories import SAMPLE_TARGET, harvester_data, job_type_id
from lxml import html
from operator_helpers import path_of, track

from oarepo_oaipmh_harvester.services.targets import writable_target_ids

PANEL = "/administration"


@pytest.fixture()
def as_admin(login, users):
    return login(users.admin)


def page(client, url: str):
    res = client.get(url)
    assert res.status_code == 200, res.data[-2000:]
    return html.fromstring(res.data)


def data_of(tree, element_id: str) -> dict:
    """The data-* attributes of the element that mounts a React app, JSON decoded."""
    (element,) = tree.xpath(f'//*[@id="{element_id}"]')
    data = {}
    for name, value in element.attrib.items():
        if name.startswith("data-"):
            try:
                data[name[5:]] = json.loads(value)
            except ValueError:
                data[name[5:]] = value
    return data


def test_menu_lists_both_views(as_admin, harvesters):
    tree = page(as_admin, f"{PANEL}/")
    links = tree.xpath("//a/@href")
    assert f"{PANEL}/oai-harvesters" in links and f"{PANEL}/oai-harvested-records" in links
    assert f"{PANEL}/jobs" in links  # the harvesters' jobs are scheduled there


def test_the_jobs_pages_of_invenio_jobs_render_with_the_next_run_field(as_admin, harvesters):
    """invenio-jobs' own list and detail pages build their columns from its JobSchema, to
    which this plugin adds `next_run`."""
    page(as_admin, f"{PANEL}/jobs")
    job_id = as_admin.get("/api/oai-harvest/harvesters/a").json["job"]["id"]
    page(as_admin, f"{PANEL}/jobs/{job_id}")


def test_harvester_list_page_and_the_search_it_makes(as_admin, harvesters):
    tree = page(as_admin, f"{PANEL}/oai-harvesters")
    assert "OAI-PMH harvesters" in tree.findtext(".//h1")
    data = data_of(tree, "invenio-search-config")
    config = data["invenio-search-config"]
    endpoint = config["searchApi"]["axios"]["url"]
    assert endpoint == "https://repo.example.org/api/oai-harvest/harvesters"
    assert [o["sortBy"] for o in config["sortOptions"]] == ["name", "id", "newest", "updated"]
    assert data["create-endpoint"] == f"{PANEL}/oai-harvesters/create"
    assert data["pid-path"] == "id" and data["display-edit"] and data["display-delete"]
    assert data["actions"]["run"]["payload_schema"].keys() >= {"since", "full", "identifiers"}

    # What the search app asks for: every sort it offers works.
    for option in config["sortOptions"]:
        res = as_admin.get(
            path_of(endpoint),
            query_string={"q": "", "sort": option["sortBy"], "size": 20, "page": 1},
        )
        assert res.status_code == 200 and res.json["hits"]["total"] == 2
    # The "run now" action posts its form to the item's run link.
    hit = as_admin.get(path_of(endpoint)).json["hits"]["hits"][0]
    res = as_admin.post(path_of(hit["links"]["run"]), json={"identifiers": ["oai:unknown:1"]})
    assert res.status_code == 202


def test_harvester_detail_shows_job_last_runs_counts_and_records_link(as_admin, harvesters, corpus):
    tree = page(as_admin, f"{PANEL}/oai-harvesters/a")
    details = data_of(tree, "invenio-details-config")
    assert details["pid"] == "a"
    assert details["api-endpoint"] == "https://repo.example.org/api/oai-harvest/harvesters"
    assert "run" in details["actions"]
    # The harvester's job exists from its creation, active and waiting for a schedule.
    (job_row,) = tree.xpath('//*[@id="oai-harvester-jobs"]/tbody/tr')
    assert job_row.xpath("td")[1].text_content().strip() == "not scheduled"
    assert job_type_id("a") in tree.text_content()
    assert "Never run." in tree.text_content()

    run = as_admin.post("/api/oai-harvest/harvesters/a/run").json
    assert run["status"] == "SUCCESS"
    tree = page(as_admin, f"{PANEL}/oai-harvesters/a")

    job_link = tree.xpath('//*[@id="oai-harvester-jobs"]//a')[0]
    harvester = as_admin.get("/api/oai-harvest/harvesters/a").json
    assert len(harvester["jobs"]) == 1 and harvester["job"] == harvester["jobs"][0]
    assert (
        job_link.get("href")
        == f"https://repo.example.org/administration/jobs/{harvester['job']['id']}"
    )
    (row,) = tree.xpath('//*[@id="oai-harvester-runs"]/tbody/tr')
    cells = [cell.text_content().strip() for cell in row.xpath("td")]
    # Harvested, created, updated or deleted, unchanged, failed; then its Undo button.
    assert cells[1] == "SUCCESS" and cells[4:] == ["50", "50", "0", "0", "0", ""]
    (undo,) = row.xpath('td[@class="oai-harvester-run-undo"]/div')
    assert undo.get("data-undo-url") == (
        f"https://repo.example.org/api/oai-harvest/harvesters/a/runs/{run['id']}/undo"
    )
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", cells[2])  # not raw ISO
    assert row.xpath("td/a/@href") == [f"https://repo.example.org/administration/runs/{run['id']}"]
    records = tree.xpath('//*[@id="oai-harvester-records-link"]')[0]
    assert (
        records.get("href")
        == "https://repo.example.org/administration/oai-harvested-records?f=harvester%3Aa"
    )
    assert "(50)" in records.text_content()
    assert not tree.xpath('//*[@id="oai-harvester-errors-link"]')  # nothing failed


def test_harvester_detail_links_records_with_errors(as_admin, tracked):
    tree = page(as_admin, f"{PANEL}/oai-harvesters/a")
    (errors,) = tree.xpath('//*[@id="oai-harvester-errors-link"]')
    assert "(1)" in errors.text_content() and "has_errors%3Atrue" in errors.get("href")


def test_harvester_detail_groups_failing_records_by_reason(as_admin, harvesters):
    for number in range(5):
        track("a", f"oai:a:{number}", errors=["no dc:date in EDTF form\ndetails of the record"])
    track("a", "oai:a:9", errors=["target refused: title too short"])
    track("b", "oai:b:1", errors=["no dc:date in EDTF form"])  # another harvester's
    tree = page(as_admin, f"{PANEL}/oai-harvesters/a")
    rows = tree.xpath('//*[@id="oai-harvester-error-reasons"]//tr')
    assert [" ".join(row.text_content().split()) for row in rows] == [
        "5 × no dc:date in EDTF form oai:a:0, oai:a:1, oai:a:2, …",
        "1 × target refused: title too short oai:a:9",
    ]
    link = rows[0].xpath(".//a")[0].get("href")
    assert link.endswith("?f=harvester%3Aa&f=error%3Ano+dc%3Adate+in+EDTF+form")
    # The link is the records search the panel's list makes: it finds just those five.
    found = as_admin.get(
        "/api/oai-harvest/records",
        query_string={"harvester": "a", "error": "no dc:date in EDTF form"},
    ).json
    assert found["hits"]["total"] == 5


def test_unknown_harvester_and_record_pages_are_404(as_admin, harvesters):
    assert as_admin.get(f"{PANEL}/oai-harvesters/nope").status_code == 404
    assert as_admin.get(f"{PANEL}/oai-harvested-records/a/oai:nope").status_code == 404
    assert as_admin.get(f"{PANEL}/oai-harvested-records/a").status_code == 404


# The field types that invenio-administration's form renderer (7.3) has a widget for; an
# array widget needs items with sub-fields. Anything else blanks the page in a browser.
WIDGET_TYPES = {
    "string", "integer", "uuid", "datetime", "date", "array", "bool", "hidden", "vocabulary",
    "dynamic", "object", "dropdown", "textarea", "html",
}  # fmt: skip


def every_field_has_a_widget(schema: dict, form_fields: dict) -> bool:
    for name, config in form_fields.items():
        field = schema[name]
        kind = config.get("type") or field["type"]
        assert kind in WIDGET_TYPES, f"{name}: no widget for {kind!r}"
        if kind == "array":
            assert field["items"].get("properties"), f"{name}: array of plain values"
    return True


def test_run_forms_have_a_widget_for_every_argument(as_admin, harvesters):
    tree = page(as_admin, f"{PANEL}/oai-harvesters")
    payload = data_of(tree, "invenio-search-config")["actions"]["run"]["payload_schema"]
    assert every_field_has_a_widget(payload, payload)
    assert payload["identifiers"]["type"] == "string" and payload["identifiers"]["metadata"]["rows"]
    # invenio-jobs' run form and Job edit page draw the job type's arguments schema.
    args = as_admin.get(f"/api/tasks/{job_type_id('a')}/args").json
    assert args.keys() >= {"since", "full", "identifiers", "reconcile_only"}
    assert every_field_has_a_widget(args, {k: v for k, v in args.items() if k != "job_arg_schema"})


def test_create_and_edit_forms_and_the_calls_they_make(
    as_admin, users, harvesters, provider, set_config
):
    tree = page(as_admin, f"{PANEL}/oai-harvesters/create")
    form = data_of(tree, "invenio-administration-create-root")
    assert form["api-endpoint"] == "https://repo.example.org/api/oai-harvest/harvesters"
    fields = form["form-fields"]
    in_order = sorted(fields, key=lambda name: fields[name]["order"])
    assert in_order[:4] == ["id", "name", "base_url", "metadata_prefix"]
    schema = form["resource-schema"]
    assert schema["id"]["required"] and schema["id"]["createOnly"]
    # Left empty, the check picks the richest format the provider offers (issue 35).
    assert not schema["metadata_prefix"].get("required")
    assert "richest format" in fields["metadata_prefix"]["description"]
    assert schema["watermark"]["readOnly"]
    assert every_field_has_a_widget(schema, fields)
    # Lists of plain values are multiple choices with additions, not the array widget.
    assert fields["setspecs"]["type"] == "dropdown" and fields["setspecs"]["allowAdditions"]
    managers = fields["harvest_managers"]
    assert managers["type"] == "dropdown" and managers["multiple"]
    assert {
        "id": users.manager.user.id,
        "title_l10n": f"manager@example.org (id {users.manager.user.id})",
    } in managers["options"]
    # Targets are a choice of writable records services, not free text (with the rdm extra
    # installed, InvenioRDM's services are among them).
    writable = writable_target_ids()
    assert SAMPLE_TARGET in writable
    assert fields["target"]["options"] == [{"id": i, "title_l10n": i} for i in writable]
    assert "&lt;id&gt;" in fields["id"]["description"]  # shown as HTML: <id> escaped

    # The form posts to the API; a failing preflight check comes back on its field.
    set_config(OAI_HARVESTER_PREFLIGHT_CHECK=True)
    body = harvester_data("new", provider.base_url, metadata_prefix="marc21")
    res = as_admin.post(path_of(form["api-endpoint"]), json=body)
    assert res.status_code == 400
    assert res.json["errors"][0]["field"] == "metadata_prefix"
    assert "does not offer metadata prefix 'marc21'" in res.json["errors"][0]["messages"][0]
    assert (
        as_admin.post(
            path_of(form["api-endpoint"]), json={**body, "metadata_prefix": "oai_dc"}
        ).status_code
        == 201
    )

    tree = page(as_admin, f"{PANEL}/oai-harvesters/new/edit")
    form = data_of(tree, "invenio-administration-edit-root")
    assert form["pid"] == "new"
    # The edit form loads the item and puts it back changed.
    item = as_admin.get(f"{path_of(form['api-endpoint'])}/new").json
    res = as_admin.put(f"{path_of(form['api-endpoint'])}/new", json={**item, "name": "Renamed"})
    assert res.status_code == 200 and res.json["name"] == "Renamed"


def test_record_list_page_with_facets_and_the_search_it_makes(as_admin, tracked):
    tree = page(as_admin, f"{PANEL}/oai-harvested-records")
    data = data_of(tree, "invenio-search-config")
    config = data["invenio-search-config"]
    assert data["pid-path"] == "id" and not tree.xpath('//a[contains(@href, "create")]')
    endpoint = config["searchApi"]["axios"]["url"]
    assert endpoint == "https://repo.example.org/api/oai-harvest/records"
    assert [(agg["aggName"], agg["title"]) for agg in config["aggs"]] == [
        ("harvester", "Harvester"),
        ("deleted", "Deleted at the source"),
        ("has_errors", "With errors"),
        ("has_warnings", "With warnings"),
        ("has_conflicts", "With conflicts"),
    ]
    assert "reharvest" in data["actions"]

    # The search app sends selected facets as query arguments named after them.
    res = as_admin.get(
        path_of(endpoint),
        query_string={
            "harvester": "a",
            "has_errors": "true",
            "sort": "newest",
            "page": 1,
            "size": 20,
        },
    )
    assert [hit["oai_identifier"] for hit in res.json["hits"]["hits"]] == ["oai:a:2"]
    for agg in config["aggs"]:
        assert {"buckets", "label"} <= res.json["aggregations"][agg["aggName"]].keys()
    # Its detail link: the list endpoint plus the item's id.
    hit = res.json["hits"]["hits"][0]
    assert as_admin.get(f"{PANEL}/oai-harvested-records/{hit['id']}").status_code == 200


def test_record_detail_shows_readable_xml_transformed_data_errors_and_links(as_admin, harvesters):
    track(
        "a",
        "oai:x:1",
        local_pid="abc-9",
        errors=["Validation failed: <title> missing"],
        original_xml=(
            '<record xmlns="http://www.openarchives.org/OAI/2.0/"><header>'
            "<identifier>oai:x:1</identifier></header><metadata><dc>Zürich &amp; more</dc>"
            "</metadata></record>"
        ),
        transformed={"metadata": {"title": ["Zürich"]}},
    )
    res = as_admin.get(f"{PANEL}/oai-harvested-records/a/oai:x:1")
    assert res.status_code == 200
    tree = html.fromstring(res.data)
    xml = tree.xpath('//*[@id="oai-record-xml"]/pre')[0].text
    assert "\n  <header>\n    <identifier>oai:x:1</identifier>" in xml  # indented for reading
    assert "Zürich &amp; more" in xml  # shown as XML, escaped in the page
    assert b"&lt;header&gt;" in res.data
    transformed = tree.xpath('//*[@id="oai-record-transformed"]/pre')[0].text
    assert json.loads(transformed) == {"metadata": {"title": ["Zürich"]}}
    errors = tree.xpath('//*[@id="oai-record-errors"]//li/text()')
    assert errors == ["Validation failed: <title> missing"]
    assert tree.xpath('//*[@id="oai-record-local"]/@href') == [
        "https://repo.example.org/api/oai-sample-records/abc-9"
    ]
    assert tree.xpath('//*[@id="oai-record-harvester"]/@href') == [
        "https://repo.example.org/administration/oai-harvesters/a"
    ]
    details = data_of(tree, "invenio-details-config")
    assert details["pid"] == "a/oai:x:1"
    item = as_admin.get(f"{path_of(details['api-endpoint'])}/{details['pid']}")
    assert item.status_code == 200  # what the details panel loads


def test_broken_xml_is_shown_as_stored(as_admin, harvesters):
    track("a", "oai:x:2", original_xml="<record><unclosed>")
    tree = page(as_admin, f"{PANEL}/oai-harvested-records/a/oai:x:2")
    assert tree.xpath('//*[@id="oai-record-xml"]/pre')[0].text == "<record><unclosed>"


# -- repairs: Run now's arguments, Purge..., Preview... -----------------------------------------
REPAIRS = {"rewrite", "errors_only", "force", "retry_errors"}
PURGE_ONLY = {"purge", "forget", "confirm"}


def test_run_now_offers_the_repairs_but_not_a_purge(as_admin, harvesters):
    listed = data_of(page(as_admin, f"{PANEL}/oai-harvesters"), "invenio-search-config")
    detailed = data_of(page(as_admin, f"{PANEL}/oai-harvesters/a"), "invenio-details-config")
    for actions in (listed["actions"], detailed["actions"]):
        form = actions["run"]["payload_schema"]
        assert form.keys() >= REPAIRS | {"since", "full", "identifiers", "reconcile_only"}
        assert not form.keys() & PURGE_ONLY  # a purge has its own action, with a typed id
        assert every_field_has_a_widget(form, form)
        # Labels, not field names ("Errors_only"), in the order of a form, not by name.
        assert form["errors_only"]["title"] == "Errors only"
        assert form["retry_errors"]["title"] == "Retry failed records"
        in_order = sorted(form, key=lambda name: form[name]["order"])
        assert in_order[:3] == ["since", "full", "identifiers"] and in_order[-1] == "title"
    # Only the detail page, where the harvester's records are counted, offers a purge.
    assert listed["actions"].keys() == {"run"}
    # In the order of the page's menu (keys sorted): Preview beside Run now.
    assert list(detailed["actions"]) == ["purge", "run", "run_preview"]

    # What the form posts: a repair goes to the run link like any other run.
    harvester = as_admin.get("/api/oai-harvest/harvesters/a").json
    res = as_admin.post(
        path_of(harvester["links"]["run"]),
        json={"rewrite": True, "errors_only": True, "force": False, "retry_errors": False},
    )
    assert res.status_code == 202 and res.json["args"]["rewrite"] is True
    assert res.json["title"] == "Rewrite from stored XML"


def test_purge_action_asks_for_the_id_and_posts_to_the_purge_link(as_admin, harvesters):
    detailed = data_of(page(as_admin, f"{PANEL}/oai-harvesters/a"), "invenio-details-config")
    purge = detailed["actions"]["purge"]
    form = purge["payload_schema"]
    assert form.keys() == {"confirm", "forget"}
    assert form["confirm"]["order"] < form["forget"]["order"]
    assert form["confirm"]["required"] and form["forget"]["type"] == "bool"
    assert every_field_has_a_widget(form, form)
    # The form says what a purge does and which id to type (its description is HTML).
    assert "Deletes every local record" in form["confirm"]["metadata"]["description"]
    assert "Type <code>a</code> to confirm." in form["confirm"]["metadata"]["description"]

    # The action posts the form to the harvester's links.purge: a wrong id comes back on the
    # field (test_rest_repairs.py), the right one starts the purge.
    harvester = as_admin.get("/api/oai-harvest/harvesters/a").json
    res = as_admin.post(
        path_of(harvester["links"]["purge"]), json={"confirm": "a", "forget": False}
    )
    assert res.status_code == 202, res.json
    assert res.json["title"] == "Purge" and res.json["status"] == "SUCCESS"


def test_preview_action_opens_the_preview_page(as_admin, harvesters):
    detailed = data_of(page(as_admin, f"{PANEL}/oai-harvesters/a"), "invenio-details-config")
    preview = detailed["actions"]["run_preview"]
    assert preview["payload_schema"] is None
    assert preview["page"] == f"{PANEL}/oai-harvesters/a/preview"


def test_preview_page_renders_the_form_for_administrators(as_admin, harvesters):
    tree = page(as_admin, f"{PANEL}/oai-harvesters/a/preview")
    assert "Preview a run" in tree.findtext(".//h1")
    mount = data_of(tree, "oai-harvester-preview")
    assert mount["harvester"]["id"] == "a"
    assert mount["harvester"]["links"]["preview"] == (
        "https://repo.example.org/api/oai-harvest/harvesters/a/preview"
    )
    assert mount["harvester-page"] == f"{PANEL}/oai-harvesters/a"
    form = mount["form-schema"]
    assert sorted(form, key=lambda name: form[name]["order"]) == [
        *("since", "full", "identifiers", "rewrite", "errors_only", "force", "limit")
    ]
    assert every_field_has_a_widget(form, form)
    assert form["limit"]["type"] == "integer" and "100" in form["limit"]["metadata"]["description"]
    assert tree.xpath('//a[@id="oai-preview-back"]/@href') == [f"{PANEL}/oai-harvesters/a"]
    # The page's script is the plugin's bundle: no inline script (CSP 'self').
    inline = [s for s in tree.xpath("//script[not(@src)]") if (s.text or "").strip()]
    assert not inline, [s.text[:80] for s in inline]
    assert tree.xpath('//script[@src="oarepo-oaipmh-harvester-admin.js"]')


def test_preview_page_is_for_administrators_only(login, users, harvesters):
    client = login(None)
    assert client.get(f"{PANEL}/oai-harvesters/a/preview").status_code == 403
    for user in (users.plain, users.manager):  # a manager previews through the REST API
        client = login(user)
        assert client.get(f"{PANEL}/oai-harvesters/a/preview").status_code == 403
    client = login(users.admin)
    assert client.get(f"{PANEL}/oai-harvesters/nope/preview").status_code == 404


def test_what_the_preview_page_posts_and_the_report_it_shows(as_admin, harvesters, corpus):
    assert as_admin.post("/api/oai-harvest/harvesters/a/run").json["status"] == "SUCCESS"
    changed = sorted(corpus.live_identifiers())[3]
    corpus.advance_clock(minutes=5)
    corpus.update(changed, metadata={**corpus.get(changed).metadata, "title": ["<b>New</b>"]})
    mount = data_of(page(as_admin, f"{PANEL}/oai-harvesters/a/preview"), "oai-harvester-preview")

    # What the form sends: every field, the empty ones as "" (the API drops them).
    body = {"since": "", "full": False, "identifiers": "", "rewrite": False}
    body |= {"errors_only": False, "force": False, "limit": ""}
    res = as_admin.post(path_of(mount["harvester"]["links"]["preview"]), json=body)
    assert res.status_code == 200, res.json
    report = res.json
    assert report["counts"]["examined"] == 1 and report["counts"]["updated"] == 1
    (entry,) = report["entries"]
    assert entry["identifier"] == changed and entry["action"] == "update"
    assert {"op": "replace", "path": "/metadata/title/0", "value": "<b>New</b>"} in entry["changes"]
    assert as_admin.get("/api/oai-harvest/harvesters/a/runs").json["hits"]["total"] == 1

    # A bad argument is a 400 naming its field, which the form shows there.
    res = as_admin.post(
        path_of(mount["harvester"]["links"]["preview"]), json={**body, "errors_only": True}
    )
    assert res.status_code == 400
    assert res.json["errors"] == [{"field": "errors_only", "messages": ["Only with rewrite."]}]


def test_harvester_detail_shows_held_deletions_with_their_buttons(as_admin, harvesters, corpus):
    """The deletion guard's banner (issue 37): how many deletions wait, where to list them, and
    the buttons that release them (their URLs the REST API's)."""
    from factories import run_harvest

    from oarepo_oaipmh_harvester.harvest.window import SinceSource

    run_harvest("a")
    assert not page(as_admin, f"{PANEL}/oai-harvesters/a").xpath(
        '//*[@id="oai-harvester-held-deletions"]'
    )
    corpus.advance_clock(hours=1)
    for identifier in sorted(corpus.live_identifiers())[:30]:
        corpus.delete(identifier)
    assert run_harvest("a", since_source=SinceSource.WATERMARK).counts.held == 30

    tree = page(as_admin, f"{PANEL}/oai-harvesters/a")

    (banner,) = tree.xpath('//*[@id="oai-harvester-held-deletions"]')
    assert "30 deletions are held" in banner.text_content()
    assert "invenio oai deletions a" in banner.text_content()
    (buttons,) = banner.xpath('.//*[@id="oai-harvester-held-deletions-buttons"]')
    api = "https://repo.example.org/api/oai-harvest/harvesters/a/deletions"
    assert buttons.get("data-confirm-url") == f"{api}/confirm"
    assert buttons.get("data-reject-url") == f"{api}/reject"
    assert buttons.get("data-held") == "30"
