"""A harvester created without a metadata prefix gets the richest format its provider offers
(issue 35, point 3): asked through the real preflight check against the bundled provider, on
every surface that creates harvesters, and harvested into the real InvenioRDM records service."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

pytest.importorskip("invenio_rdm_records")

from factories import OMIT, SAMPLE_TARGET, harvester_data, run_harvest
from invenio_access.permissions import system_identity
from invenio_db import db

from oarepo_oaipmh_harvester.models import OAIHarvester
from oarepo_oaipmh_harvester.proxies import current_harvester_service
from oarepo_oaipmh_harvester.services.errors import HarvesterValidationError
from oarepo_oaipmh_harvester.testing.corpus import lido_corpus
from oarepo_oaipmh_harvester.testing.provider import OAIPMHProvider

from .conftest import RDM_TARGET
from .helpers import tracking
from .test_lido_to_rdm import EXTRA_VOCABULARIES

PREFERENCE = "lido, oai_datacite, datacite, oai_openaire, marcxml, marc21, oai_dc"


@pytest.fixture(scope="module")
def museum_vocabularies(rdm_vocabularies):
    from oaiharvest_test_support.rdm import load_vocabularies

    load_vocabularies(EXTRA_VOCABULARIES)


def provider_of(*prefixes: str) -> OAIPMHProvider:
    corpus = lido_corpus()
    corpus.set_clock(datetime(2024, 6, 1, tzinfo=UTC))
    return OAIPMHProvider(corpus, page_size=2, metadata_prefixes=prefixes)


def create(base_url: str, **extra) -> dict:
    data = harvester_data("auto", base_url, **{"metadata_prefix": OMIT, **extra})
    return current_harvester_service.create(system_identity, data, check=True).data


def test_lido_is_picked_over_oai_dc_into_inveniordm_and_harvested(rdm, museum_vocabularies):
    with provider_of("oai_dc", "lido") as provider:
        created = create(provider.base_url, target=RDM_TARGET)

        assert (created["metadata_prefix"], created["transformer"]) == ("lido", "lido_rdm")
        assert created["metadata_prefix_choice"] == (
            "lido was picked: of the formats the provider offers (oai_dc, lido), the first in "
            f"this site's order for 'records' ({PREFERENCE}; "
            "OAI_HARVESTER_PREFERRED_PREFIXES['inveniordm']), read by lido_rdm."
        )
        stored = db.session.get(OAIHarvester, "auto")
        assert stored.metadata_prefix_choice == created["metadata_prefix_choice"]

        summary = run_harvest("auto")

    assert (summary.counts.created, summary.counts.failed) == (5, 0)
    published = [
        rdm.read(system_identity, row.local_pid).to_dict()["metadata"]
        for row in tracking().values()
    ]
    # Museum objects, as lido_rdm makes them: not the Dublin Core of the same records.
    assert {item["resource_type"]["id"] for item in published} <= {
        "physicalobject",
        "image-painting",
        "image-drawing",
        "image-photo",
        "other",
    }


def test_oai_dc_alone_gets_oai_dc_rdm(rdm):
    with provider_of("oai_dc") as provider:
        created = create(provider.base_url, target=RDM_TARGET)

    assert (created["metadata_prefix"], created["transformer"]) == ("oai_dc", "oai_dc_rdm")


def test_a_plain_target_keeps_its_own_default(rdm, app):
    with provider_of("lido", "oai_dc") as provider:
        created = create(provider.base_url, target=SAMPLE_TARGET)

    assert created["metadata_prefix"] == "oai_dc"
    assert created["transformer"] == app.config["OAI_HARVESTER_DEFAULT_TRANSFORMER"]
    assert "OAI_HARVESTER_PREFERRED_PREFIXES['other']" in created["metadata_prefix_choice"]


def test_a_named_prefix_is_never_overridden(rdm):
    with provider_of("oai_dc", "lido") as provider:
        created = create(provider.base_url, target=RDM_TARGET, metadata_prefix="oai_dc")

    assert (created["metadata_prefix"], created["transformer"]) == ("oai_dc", "oai_dc_rdm")
    assert created["metadata_prefix_choice"] is None


def test_a_named_transformer_narrows_the_choice(rdm):
    with provider_of("lido", "oai_dc") as provider:
        created = create(provider.base_url, target=RDM_TARGET, transformer="oai_dc_rdm")

    assert (created["metadata_prefix"], created["transformer"]) == ("oai_dc", "oai_dc_rdm")


def test_a_provider_with_nothing_usable_is_refused_naming_what_it_offers(rdm):
    with provider_of("mods", "didl") as provider:
        with pytest.raises(HarvesterValidationError) as refused:
            create(provider.base_url, target=RDM_TARGET)

    [message] = refused.value.errors["metadata_prefix"]
    assert message == (
        "The provider offers no format this site can harvest into 'records': it offers mods, "
        f"didl; this site reads {PREFERENCE} (OAI_HARVESTER_PREFERRED_PREFIXES). Name a "
        "metadata prefix and a transformer that reads it."
    )
    assert db.session.get(OAIHarvester, "auto") is None


def test_without_the_check_a_prefix_must_be_named(rdm):
    with provider_of("oai_dc") as provider:
        data = harvester_data("auto", provider.base_url, metadata_prefix=OMIT, target=RDM_TARGET)
        with pytest.raises(HarvesterValidationError) as refused:
            current_harvester_service.create(system_identity, data, check=False)

    assert "let the provider check run" in refused.value.errors["metadata_prefix"][0]


def test_the_command_line_says_which_and_why(rdm, app, monkeypatch):
    from oarepo_oaipmh_harvester import cli

    monkeypatch.setitem(app.config, "OAI_HARVESTER_PREFLIGHT_CHECK", True)
    with provider_of("oai_dc", "lido") as provider:
        result = app.test_cli_runner().invoke(
            cli.oai,
            ["harvester", "create", "--id", "cli", "--name", "CLI", "--base-url",
             provider.base_url, "--target", RDM_TARGET],
        )  # fmt: skip

    assert result.exit_code == 0, result.output
    created, why = result.output.splitlines()
    assert created == "Created harvester cli."
    assert why.startswith("lido was picked: of the formats the provider offers (oai_dc, lido)")
