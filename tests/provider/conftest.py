"""Fixtures for the OAI-PMH test provider: a small hourly corpus and a provider factory."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from oarepo_oaipmh_harvester.testing.corpus import Corpus
from oarepo_oaipmh_harvester.testing.provider import OAIPMHProvider

T0 = datetime(2020, 1, 1, tzinfo=UTC)
CLOCK = datetime(2024, 6, 1, 12, 0, 0, tzinfo=UTC)


@pytest.fixture
def corpus() -> Corpus:
    """25 records one hour apart: 24 on 2020-01-01, the last on 2020-01-02."""
    corpus = Corpus.generate(25, start=T0, step_seconds=3600)
    corpus.set_clock(CLOCK)
    return corpus


@pytest.fixture
def make_provider() -> Iterator[Callable[..., OAIPMHProvider]]:
    """Start providers on demand; all are stopped at teardown."""
    started: list[OAIPMHProvider] = []

    def factory(corpus: Corpus, **kwargs: Any) -> OAIPMHProvider:
        provider = OAIPMHProvider(corpus, **kwargs)
        provider.start()
        started.append(provider)
        return provider

    yield factory
    for provider in started:
        provider.stop()


@pytest.fixture
def provider(corpus: Corpus, make_provider: Callable[..., OAIPMHProvider]) -> OAIPMHProvider:
    return make_provider(corpus, page_size=10)
