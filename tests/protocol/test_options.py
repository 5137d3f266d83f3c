"""Tuning defaults live in ProtocolOptions only, and agree with the application's config."""

from __future__ import annotations

import dataclasses

import pytest

from oarepo_oaipmh_harvester import config
from oarepo_oaipmh_harvester.protocol import OAIClient, ProtocolOptions
from oarepo_oaipmh_harvester.protocol.options import OPTION_NAMES

# Config key -> option, for the keys that exist in config.py.
CONFIG_KEYS = {
    "OAI_HARVESTER_REQUEST_TIMEOUT": "timeout",
    "OAI_HARVESTER_MAX_RETRIES": "max_retries",
    "OAI_HARVESTER_MAX_RETRY_WAIT": "max_retry_wait",
    "OAI_HARVESTER_MAX_RESTARTS": "max_restarts",
    "OAI_HARVESTER_REQUEST_DELAY": "request_delay",
}


def test_defaults_equal_the_application_config() -> None:
    defaults = ProtocolOptions()
    for key, option in CONFIG_KEYS.items():
        assert getattr(config, key) == getattr(defaults, option) or tuple(
            getattr(config, key)
        ) == getattr(defaults, option), key
    # Any option the integrator adds as OAI_HARVESTER_<OPTION> must agree as well.
    for option in OPTION_NAMES:
        key = f"OAI_HARVESTER_{option.upper()}"
        if hasattr(config, key) and key not in CONFIG_KEYS:
            value = getattr(config, key)
            value = tuple(value) if isinstance(value, list) else value
            assert value == getattr(defaults, option), key


def test_client_without_options_uses_the_defaults() -> None:
    with OAIClient("http://127.0.0.1:9/oai") as client:
        assert client.options == ProtocolOptions()
        assert client.options.timeout == (10.0, 120.0)
        assert client.options.max_retry_wait == 600.0
        assert client._transport.retry.max_wait == 600.0
        assert client._transport.timeout == (10.0, 120.0)


def test_keyword_overrides_and_options_object() -> None:
    base = ProtocolOptions(max_retries=1, timeout=3)
    with OAIClient("http://127.0.0.1:9/oai", base, max_restarts=7) as client:
        assert client.options.max_retries == 1
        assert client.options.timeout == (3.0, 3.0)
        assert client.options.max_restarts == 7 and client.max_restarts == 7
    assert base.max_restarts == 3  # frozen: the caller's options are not changed


def test_page_limit_default_never_meets_a_large_harvest() -> None:
    # 200,000 records at 10 a page, restarted the allowed number of times
    defaults = ProtocolOptions()
    assert defaults.max_pages > 200_000 // 10 * (1 + defaults.max_restarts)


def test_default_deadline_is_a_few_read_timeouts() -> None:
    defaults = ProtocolOptions()
    assert 2 * defaults.read_timeout <= defaults.request_deadline <= 5 * defaults.read_timeout


def test_unknown_option_is_refused() -> None:
    with pytest.raises(TypeError, match="max_retrys"):
        OAIClient("http://127.0.0.1:9/oai", max_retrys=3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ProtocolOptions().max_retries = 2  # type: ignore[misc]


@pytest.mark.parametrize(
    "bad",
    [
        {"max_retries": -1},
        {"max_restarts": -1},
        {"max_response_bytes": 0},
        {"timeout": (1, 0)},
        {"request_deadline": 0},
        {"max_record_bytes": 0},
        {"max_pages": 0},
        {"forbidden_networks": ("not-a-network",)},
    ],
)
def test_invalid_options_are_refused(bad) -> None:
    with pytest.raises(ValueError, match=next(iter(bad))):
        ProtocolOptions(**bad)
