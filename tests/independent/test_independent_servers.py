"""Plain sickle against independent OAI-PMH implementations (pyoai, oai-repo) serving a corpus.

These tests pin down how the independent servers behave on our corpus, so that harvester tests
can rely on them: which combinations harvest correctly and which fail because of a known quirk
of the library (documented in `independent_servers`, marked `xfail(strict=True)` here so that a
fixed library shows up as XPASS).

No Invenio app is needed: everything runs against servers in daemon threads on 127.0.0.1.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from independent_servers import (
    QUIRKS,
    IndependentServer,
    day,
    end_of_day,
    seconds,
    start_independent,
)
from sickle import Sickle, oaiexceptions
from sickle.iterator import OAIResponseIterator
from sickle.models import Header, Record

from oarepo_oaipmh_harvester.testing.corpus import Corpus, CorpusRecord

KINDS = ("pyoai", "oai-repo")
GRANULARITIES = ("seconds", "day")
MODES = ("persistent", "transient", "no")
PAGE_SIZE = 10
OAI_NS = "{http://www.openarchives.org/OAI/2.0/}"

T0 = datetime(2024, 1, 1, tzinfo=UTC)
# Odd step: datestamps have non-zero seconds and ~4 records share a day, so both second and
# day granularity have something to get wrong; 35 records span 9 days.
STEP = timedelta(hours=6, seconds=7)
RECORD_COUNT = 35
# Tombstones before, inside and after the selective-harvesting window below.
DELETED_INDICES = (3, 11, 17, 24, 30)
# Selective-harvesting window: from the 8th to the 27th record (both live).
WINDOW = (7, 26)


@dataclass(frozen=True)
class Combo:
    kind: str
    granularity: str
    mode: str

    @property
    def id(self) -> str:
        return f"{self.kind}-{self.granularity}-{self.mode}"

    @property
    def shows_tombstones(self) -> bool:
        return self.mode != "no"


# Which quirk (key of `QUIRKS`) breaks which aspect for which combination.
_QUIRK_RULES: dict[str, Callable[[Combo], list[str]]] = {
    "identify": lambda c: (
        ["pyoai-day-granularity"] if c.kind == "pyoai" and c.granularity == "day" else []
    ),
    "datestamps": lambda c: (
        ["pyoai-day-granularity"] if c.kind == "pyoai" and c.granularity == "day" else []
    ),
    "tombstones": lambda c: (
        ["oai-repo-tombstones"] if c.kind == "oai-repo" and c.shows_tombstones else []
    ),
    "until-day": lambda c: ["oai-repo-day-until"] if c.kind == "oai-repo" else [],
    "offset-tokens": lambda c: ["pyoai-offset-tokens"] if c.kind == "pyoai" else [],
    "final-token": lambda c: ["pyoai-final-token"] if c.kind == "pyoai" else [],
    "finer-granularity": lambda c: ["pyoai-finer-granularity"] if c.kind == "pyoai" else [],
    "mixed-granularity": lambda c: ["oai-repo-mixed-granularity"] if c.kind == "oai-repo" else [],
}


def cases(aspect: str | None = None, where: Callable[[Combo], bool] = lambda c: True) -> list[Any]:
    """All kind x granularity x deletedRecord combinations, xfailed where a quirk applies."""
    params = []
    for kind in KINDS:
        for granularity in GRANULARITIES:
            for mode in MODES:
                combo = Combo(kind, granularity, mode)
                if not where(combo):
                    continue
                quirks = _QUIRK_RULES[aspect](combo) if aspect else []
                marks = (
                    [pytest.mark.xfail(strict=True, reason="; ".join(QUIRKS[q] for q in quirks))]
                    if quirks
                    else []
                )
                params.append(pytest.param(combo, marks=marks, id=combo.id))
    return params


# -- fixtures -------------------------------------------------------------------------------


def build_corpus() -> Corpus:
    corpus = Corpus.generate(RECORD_COUNT, start=T0, step_seconds=int(STEP.total_seconds()))
    for index in DELETED_INDICES:
        record = corpus.select()[index]
        # Deleted shortly after the last change, so the datestamp order stays the index order.
        corpus.delete(record.identifier, datestamp=record.datestamp + timedelta(seconds=30))
    corpus.set_clock(datetime(2024, 6, 1, 12, tzinfo=UTC))
    return corpus


@pytest.fixture(scope="module")
def independent_corpus() -> Corpus:
    return build_corpus()


@pytest.fixture(scope="module")
def server_pool(independent_corpus: Corpus) -> Iterator[Callable[[Combo], IndependentServer]]:
    """One running server per combination for the whole module (starting them is the cost)."""
    running: dict[Combo, IndependentServer] = {}

    def get(combo: Combo) -> IndependentServer:
        if combo not in running:
            running[combo] = start_independent(
                combo.kind,
                independent_corpus,
                page_size=PAGE_SIZE,
                granularity=combo.granularity,
                deleted_record=combo.mode,
            )
        return running[combo]

    yield get
    for server in running.values():
        server.stop()


@pytest.fixture
def combo(request: pytest.FixtureRequest) -> Combo:
    return request.param


@pytest.fixture
def server(combo: Combo, server_pool: Callable[[Combo], IndependentServer]) -> IndependentServer:
    return server_pool(combo)


# -- helpers --------------------------------------------------------------------------------


@dataclass
class Harvest:
    live: dict[str, Record] = field(default_factory=dict)
    deleted: dict[str, Record] = field(default_factory=dict)


def sickle(server: IndependentServer, **options: Any) -> Sickle:
    return Sickle(server.base_url, timeout=10, **options)


def harvest(server: IndependentServer, **params: str) -> Harvest:
    """ListRecords with plain sickle, following every resumption token."""
    result = Harvest()
    try:
        records = list(
            sickle(server).ListRecords(metadataPrefix="oai_dc", ignore_deleted=False, **params)
        )
    except oaiexceptions.NoRecordsMatch:
        return result
    for record in records:
        target = result.deleted if record.deleted else result.live
        # A paging bug shows up as a record served twice; never let it hide in a dict.
        assert record.header.identifier not in result.live | result.deleted
        target[record.header.identifier] = record
    return result


def expected(
    corpus: Corpus,
    combo: Combo,
    from_: datetime | None = None,
    until: datetime | None = None,
    set_spec: str | None = None,
) -> tuple[set[str], set[str]]:
    """(live, deleted) identifiers the server should list, straight from the corpus."""
    records = corpus.select(from_, until, set_spec, include_deleted=combo.shows_tombstones)
    return (
        {r.identifier for r in records if not r.deleted},
        {r.identifier for r in records if r.deleted},
    )


def datestamp_text(combo: Combo, value: datetime) -> str:
    return day(value) if combo.granularity == "day" else seconds(value)


def window(corpus: Corpus, combo: Combo) -> tuple[dict[str, str], datetime, datetime]:
    """Request arguments and the inclusive corpus bounds they must select."""
    records = corpus.select()
    low, high = records[WINDOW[0]].datestamp, records[WINDOW[1]].datestamp
    if combo.granularity == "day":
        midnight = low.replace(hour=0, minute=0, second=0)
        return {"from": day(low), "until": day(high)}, midnight, end_of_day(high)
    return {"from": seconds(low), "until": seconds(high)}, low, high


def corpus_record(corpus: Corpus, identifier: str) -> CorpusRecord:
    record = corpus.get(identifier)
    assert record is not None
    return record


# -- Identify, ListSets ---------------------------------------------------------------------


@pytest.mark.parametrize("combo", cases("identify"), indirect=True)
def test_identify(server: IndependentServer, combo: Combo, independent_corpus: Corpus) -> None:
    identify = sickle(server).Identify()
    assert identify.protocolVersion == "2.0"
    assert identify.deletedRecord == combo.mode
    assert (
        identify.granularity
        == {"seconds": "YYYY-MM-DDThh:mm:ssZ", "day": "YYYY-MM-DD"}[combo.granularity]
    )
    assert identify.earliestDatestamp == datestamp_text(
        combo, independent_corpus.earliest_datestamp()
    )


@pytest.mark.parametrize("combo", cases(), indirect=True)
def test_list_sets(server: IndependentServer, independent_corpus: Corpus) -> None:
    sets = {s.setSpec: s.setName for s in sickle(server).ListSets()}
    assert sets == independent_corpus.sets
    # The hierarchy is expressed by the specs themselves.
    assert "phys:astro" in sets and "phys" in sets


# -- full harvest ---------------------------------------------------------------------------


@pytest.mark.parametrize("combo", cases(), indirect=True)
def test_full_harvest_live_records(
    server: IndependentServer, combo: Combo, independent_corpus: Corpus
) -> None:
    harvested = harvest(server)
    live, _ = expected(independent_corpus, combo)
    assert set(harvested.live) == live
    for identifier, record in harvested.live.items():
        source = corpus_record(independent_corpus, identifier)
        # Every DC element, values in order, Unicode intact (titles included).
        assert record.metadata["title"] == source.metadata["title"]
        assert record.metadata == source.metadata
        assert record.header.setSpecs == list(source.sets)


@pytest.mark.parametrize("combo", cases("tombstones"), indirect=True)
def test_full_harvest_tombstones(
    server: IndependentServer, combo: Combo, independent_corpus: Corpus
) -> None:
    harvested = harvest(server)
    _, deleted = expected(independent_corpus, combo)
    assert set(harvested.deleted) == deleted
    if combo.shows_tombstones:
        assert deleted  # the corpus really has tombstones to serve


@pytest.mark.parametrize("combo", cases("datestamps"), indirect=True)
def test_header_datestamps_follow_granularity(
    server: IndependentServer, combo: Combo, independent_corpus: Corpus
) -> None:
    harvested = harvest(server)
    assert harvested.live
    for identifier, record in {**harvested.live, **harvested.deleted}.items():
        source = corpus_record(independent_corpus, identifier)
        assert record.header.datestamp == datestamp_text(combo, source.datestamp)


@pytest.mark.parametrize("combo", cases("tombstones"), indirect=True)
def test_list_identifiers(
    server: IndependentServer, combo: Combo, independent_corpus: Corpus
) -> None:
    headers: list[Header] = list(
        sickle(server).ListIdentifiers(metadataPrefix="oai_dc", ignore_deleted=False)
    )
    live, deleted = expected(independent_corpus, combo)
    assert {h.identifier for h in headers if not h.deleted} == live
    assert {h.identifier for h in headers if h.deleted} == deleted


@pytest.mark.parametrize("combo", cases(), indirect=True)
def test_resumption_pages(
    server: IndependentServer, combo: Combo, independent_corpus: Corpus
) -> None:
    before = len(server.requests)
    harvest(server)
    requests = server.requests[before:]
    listed = len(independent_corpus.select(include_deleted=combo.shows_tombstones))
    # Both libraries page over everything they list, tombstones included.
    assert len(requests) == math.ceil(listed / PAGE_SIZE) > 2
    assert requests[0] == {"verb": "ListRecords", "metadataPrefix": "oai_dc"}
    for follow_up in requests[1:]:
        assert set(follow_up) == {"verb", "resumptionToken"}


@pytest.mark.parametrize("combo", cases("final-token"), indirect=True)
def test_final_page_has_empty_resumption_token(server: IndependentServer) -> None:
    responses = list(
        sickle(server, iterator=OAIResponseIterator).ListRecords(metadataPrefix="oai_dc")
    )
    assert len(responses) > 1
    token = responses[-1].xml.find(f".//{OAI_NS}resumptionToken")
    assert token is not None, "the response completing the list has no resumptionToken"
    assert not (token.text or "").strip()


@pytest.mark.parametrize(
    "combo",
    cases("offset-tokens", where=lambda c: c.granularity == "seconds" and c.mode == "persistent"),
)
def test_change_during_harvest(combo: Combo) -> None:
    """Records unchanged during a harvest are all served, or the token is rejected."""
    corpus = build_corpus()  # this test changes its corpus
    with start_independent(combo.kind, corpus, page_size=PAGE_SIZE) as server:
        records = sickle(server).ListRecords(metadataPrefix="oai_dc", ignore_deleted=False)
        # Exactly the first page: sickle asks for the next one only when this is exhausted.
        seen = [next(records).header.identifier for _ in range(PAGE_SIZE)]
        changed = seen[0]
        corpus.update(changed, datestamp=corpus.now())  # moves it to the end of the list
        try:
            seen += [record.header.identifier for record in records]
        except oaiexceptions.BadResumptionToken:
            return  # a legitimate answer: the harvester restarts the list
    unchanged = {r.identifier for r in corpus.select()} - {changed}
    assert unchanged <= set(seen)


# -- selective harvesting -------------------------------------------------------------------


@pytest.mark.parametrize("combo", cases(), indirect=True)
def test_from_until_live(
    server: IndependentServer, combo: Combo, independent_corpus: Corpus
) -> None:
    args, low, high = window(independent_corpus, combo)
    live, _ = expected(independent_corpus, combo, low, high)
    # The bounds themselves are live records: inclusive bounds are really tested.
    records = independent_corpus.select()
    assert {records[WINDOW[0]].identifier, records[WINDOW[1]].identifier} <= live
    assert len(live) > PAGE_SIZE  # the token has to carry from/until
    assert set(harvest(server, **args).live) == live


@pytest.mark.parametrize("combo", cases("tombstones"), indirect=True)
def test_from_until_tombstones(
    server: IndependentServer, combo: Combo, independent_corpus: Corpus
) -> None:
    args, low, high = window(independent_corpus, combo)
    _, deleted = expected(independent_corpus, combo, low, high)
    assert set(harvest(server, **args).deleted) == deleted


@pytest.mark.parametrize("combo", cases(), indirect=True)
def test_from_only_and_until_only(
    server: IndependentServer, combo: Combo, independent_corpus: Corpus
) -> None:
    args, low, high = window(independent_corpus, combo)
    assert (
        set(harvest(server, **{"from": args["from"]}).live)
        == (expected(independent_corpus, combo, from_=low)[0])
    )
    assert (
        set(harvest(server, until=args["until"]).live)
        == (expected(independent_corpus, combo, until=high)[0])
    )


@pytest.mark.parametrize(
    "combo", cases("until-day", where=lambda c: c.granularity == "seconds"), indirect=True
)
def test_day_dates_in_seconds_repository(
    server: IndependentServer, combo: Combo, independent_corpus: Corpus
) -> None:
    """Every repository must accept YYYY-MM-DD; `until` then covers the whole day."""
    day_combo = Combo(combo.kind, "day", combo.mode)
    args, low, high = window(independent_corpus, day_combo)
    live, _ = expected(independent_corpus, combo, low, high)
    assert set(harvest(server, **args).live) == live


@pytest.mark.parametrize(
    "combo", cases("finer-granularity", where=lambda c: c.granularity == "day"), indirect=True
)
def test_finer_granularity_is_bad_argument(
    server: IndependentServer, independent_corpus: Corpus
) -> None:
    with pytest.raises(oaiexceptions.BadArgument):
        harvest(server, **{"from": seconds(independent_corpus.select()[WINDOW[0]].datestamp)})


@pytest.mark.parametrize(
    "combo",
    cases("mixed-granularity", where=lambda c: c.granularity == "seconds"),
    indirect=True,
)
def test_mixed_granularity_is_bad_argument(
    server: IndependentServer, independent_corpus: Corpus
) -> None:
    records = independent_corpus.select()
    with pytest.raises(oaiexceptions.BadArgument):
        harvest(
            server,
            **{"from": day(records[WINDOW[0]].datestamp)},
            until=seconds(records[WINDOW[1]].datestamp),
        )


@pytest.mark.parametrize("combo", cases(), indirect=True)
def test_set_live(server: IndependentServer, combo: Combo, independent_corpus: Corpus) -> None:
    for spec in independent_corpus.sets:
        live, _ = expected(independent_corpus, combo, set_spec=spec)
        assert set(harvest(server, set=spec).live) == live, spec
    # `phys` contains `phys:astro` records, over more than one page (the token keeps the set).
    live, _ = expected(independent_corpus, combo, set_spec="phys")
    astro, _ = expected(independent_corpus, combo, set_spec="phys:astro")
    assert astro and astro < live and len(live) > PAGE_SIZE
    assert harvest(server, set="no-such-set").live == {}


@pytest.mark.parametrize("combo", cases("tombstones"), indirect=True)
def test_set_tombstones(
    server: IndependentServer, combo: Combo, independent_corpus: Corpus
) -> None:
    for spec in independent_corpus.sets:
        _, deleted = expected(independent_corpus, combo, set_spec=spec)
        assert set(harvest(server, set=spec).deleted) == deleted, spec


# -- GetRecord ------------------------------------------------------------------------------


@pytest.mark.parametrize("combo", cases(), indirect=True)
def test_get_record_live(server: IndependentServer, independent_corpus: Corpus) -> None:
    source = independent_corpus.select()[WINDOW[0]]
    record = sickle(server).GetRecord(identifier=source.identifier, metadataPrefix="oai_dc")
    assert not record.deleted
    assert record.metadata == source.metadata


@pytest.mark.parametrize("combo", cases("tombstones"), indirect=True)
def test_get_record_tombstone(
    server: IndependentServer, combo: Combo, independent_corpus: Corpus
) -> None:
    identifier = independent_corpus.select()[DELETED_INDICES[1]].identifier
    client = sickle(server)
    if not combo.shows_tombstones:
        with pytest.raises(oaiexceptions.IdDoesNotExist):
            client.GetRecord(identifier=identifier, metadataPrefix="oai_dc")
        return
    try:
        record = client.GetRecord(identifier=identifier, metadataPrefix="oai_dc")
    except StopIteration:
        pytest.fail("GetRecord returned no record for a tombstone")
    assert record.deleted
    assert record.header.identifier == identifier
