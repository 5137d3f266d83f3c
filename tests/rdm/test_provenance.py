"""Every record written into InvenioRDM says where it came from: a link to the record at its
source (RDM's related identifiers, which its landing page shows), and - where the site added
the provenance custom fields (``oarepo_oaipmh_harvester.provenance``) - the source's name, the
OAI identifier and the datestamp, which RDM's search facets on ("harvested from")."""

from __future__ import annotations

import pytest

pytest.importorskip("invenio_rdm_records")

from factories import make_harvester, run_harvest
from invenio_access.permissions import system_identity
from invenio_search.proxies import current_search

from oarepo_oaipmh_harvester import provenance

from .conftest import RDM_TARGET, TRANSFORMER
from .helpers import tracking


@pytest.fixture(scope="module")
def app_config(app_config):
    from invenio_rdm_records import config as rdm

    app_config["RDM_NAMESPACES"] = {**rdm.RDM_NAMESPACES, **provenance.RDM_NAMESPACES}
    app_config["RDM_CUSTOM_FIELDS"] = provenance.rdm_custom_fields()
    app_config["RDM_CUSTOM_FIELDS_UI"] = provenance.RDM_CUSTOM_FIELDS_UI
    app_config["RDM_FACETS"] = {
        **rdm.RDM_FACETS,
        "harvested_from": provenance.harvested_from_facet(),
    }
    search = dict(app_config.get("RDM_SEARCH") or rdm.RDM_SEARCH)
    app_config["RDM_SEARCH"] = {**search, "facets": [*search["facets"], "harvested_from"]}
    return app_config


@pytest.fixture()
def custom_fields(app, rdm):
    """`invenio rdm-records custom-fields init`, as a site runs it after adding the fields."""
    from invenio_rdm_records.cli import custom_fields as custom_fields_command

    result = app.test_cli_runner().invoke(custom_fields_command, ["init"])
    assert result.exit_code == 0, result.output


def test_a_record_links_its_source_and_names_it(rdm, provider, corpus, custom_fields):
    make_harvester(
        provider.base_url, name="Physics archive", target=RDM_TARGET, transformer=TRANSFORMER
    )
    assert run_harvest("test").succeeded
    current_search.flush_and_refresh("rdmrecords-records")

    for identifier, row in tracking().items():
        record = rdm.read(system_identity, row.local_pid).to_dict()
        custom = record["custom_fields"]
        assert custom["harvest:source"] == "Physics archive"
        assert custom["harvest:harvester"] == "test"
        assert custom["harvest:identifier"] == identifier
        assert custom["harvest:datestamp"] == row.datestamp
        (link,) = [
            entry
            for entry in record["metadata"]["related_identifiers"]
            if entry["relation_type"]["id"] == "isderivedfrom"
        ]
        assert link["scheme"] == "url"
        assert link["identifier"] == provenance.getrecord_url(
            provider.base_url, "oai_dc", identifier
        )

    found = rdm.search(system_identity, params={"facets": {}}).to_dict()
    (bucket,) = found["aggregations"]["harvested_from"]["buckets"]
    assert (bucket["key"], bucket["doc_count"]) == ("Physics archive", len(tracking()))


def test_without_the_custom_fields_the_link_alone_is_written(rdm, provider, monkeypatch, app):
    monkeypatch.setitem(app.config, "RDM_CUSTOM_FIELDS", [])
    make_harvester(provider.base_url, target=RDM_TARGET, transformer=TRANSFORMER)
    assert run_harvest("test").succeeded
    row = next(iter(tracking().values()))
    record = rdm.read(system_identity, row.local_pid).to_dict()
    assert not record.get("custom_fields")
    assert any(
        entry["relation_type"]["id"] == "isderivedfrom"
        for entry in record["metadata"]["related_identifiers"]
    )


def test_the_landing_page_the_metadata_names_is_the_link():
    stamped = provenance.stamp_rdm(
        {
            "metadata": {
                "identifiers": [{"identifier": "https://source.example/r/1", "scheme": "url"}]
            }
        },
        provenance.Provenance("h", "H", "oai:x:1", "2024-01-01", "https://source.example/oai?x"),
        frozenset(),
    )
    (link,) = stamped["metadata"]["related_identifiers"]
    assert link["identifier"] == "https://source.example/r/1"
