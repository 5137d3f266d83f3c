"""The preflight check run before a harvester is saved."""

import pytest

from oarepo_oaipmh_harvester.services.preflight import PreflightError, check_provider


def test_good_configuration_passes(app, provider):
    # Passing means raising nothing after really asking: the sets only when some are named.
    # The answer is the formats the provider offers (a harvester without a prefix picks one).
    assert check_provider(provider.base_url, "oai_dc", ["phys", "phys:astro"]) == ["oai_dc"]
    assert [r["verb"] for r in provider.requests] == ["Identify", "ListMetadataFormats", "ListSets"]
    provider.requests.clear()
    assert check_provider(provider.base_url, None, []) == ["oai_dc"]
    assert [r["verb"] for r in provider.requests] == ["Identify", "ListMetadataFormats"]


def test_unknown_prefix_names_what_is_offered(app, provider):
    with pytest.raises(
        PreflightError, match=r"does not offer metadata prefix 'marc21' \(it offers: oai_dc\)"
    ) as raised:
        check_provider(provider.base_url, "marc21", [])
    assert raised.value.field == "metadata_prefix"


def test_unknown_set_is_named(app, provider):
    with pytest.raises(PreflightError, match="no set 'chem'") as raised:
        check_provider(provider.base_url, "oai_dc", ["phys", "chem"])
    assert raised.value.field == "setspecs"


def test_provider_that_does_not_answer(app, provider):
    with pytest.raises(PreflightError, match="did not answer Identify") as raised:
        check_provider(provider.base_url.replace("/oai", "/nothing-here"), "oai_dc", [])
    assert raised.value.field == "base_url"


def test_every_problem_is_reported_at_once_on_its_field(provider):
    with pytest.raises(PreflightError) as raised:
        check_provider(provider.base_url, "marc21", ["chem"])
    assert set(raised.value.errors) == {"metadata_prefix", "setspecs"}
    assert "marc21" in raised.value.errors["metadata_prefix"][0]
    assert "'chem'" in raised.value.errors["setspecs"][0]


def test_a_dead_endpoint_is_reported_quickly_in_plain_words():
    import socket
    import time

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(PreflightError) as raised:
        check_provider(f"http://127.0.0.1:{port}/oai", "oai_dc", [])
    assert time.monotonic() - started < 10  # not minutes of retries
    (message,) = raised.value.errors["base_url"]
    assert message.endswith("did not answer Identify: connection refused.")


def test_a_provider_on_a_network_the_site_forbids_is_refused_in_plain_words(app, provider):
    app.config["OAI_HARVESTER_ALLOW_PRIVATE_NETWORKS"] = False
    try:
        with pytest.raises(PreflightError, match="OAI_HARVESTER_ALLOW_PRIVATE_NETWORKS") as raised:
            check_provider(provider.base_url, "oai_dc", [])
    finally:
        app.config["OAI_HARVESTER_ALLOW_PRIVATE_NETWORKS"] = True
    assert raised.value.field == "base_url"
    assert "127.0.0.1 is in 127.0.0.0/8" in raised.value.message
    assert provider.requests == []  # refused before a byte was sent
