"""Fixtures of the protocol layer tests: a canned server and quickly-retrying clients."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from oarepo_oaipmh_harvester.protocol.client import OAIClient

from .wire import CannedServer

# Tiny waits everywhere: the behaviour is the same, the test run stays fast.
FAST = {"backoff_factor": 0.001, "max_retry_wait": 2.0, "timeout": (2.0, 5.0)}


@pytest.fixture
def server() -> Iterator[CannedServer]:
    canned = CannedServer()
    yield canned
    canned.stop()


@pytest.fixture
def make_client() -> Iterator[Callable[..., OAIClient]]:
    clients: list[OAIClient] = []

    def factory(base_url: str, **kwargs: Any) -> OAIClient:
        client = OAIClient(base_url, **{**FAST, **kwargs})
        clients.append(client)
        return client

    yield factory
    for client in clients:
        client.close()


@pytest.fixture
def client(server: CannedServer, make_client: Callable[..., OAIClient]) -> OAIClient:
    return make_client(server.base_url)
