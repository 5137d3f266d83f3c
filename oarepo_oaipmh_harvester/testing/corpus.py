"""An in-memory corpus of Dublin Core records that test providers serve.

The corpus is the single source of truth that every test data provider (our own quirky
provider and the independent PyPI implementations) serves, so that tests can compare what
landed in the target service with what the provider holds.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

DC_ELEMENTS = (
    "title",
    "creator",
    "subject",
    "description",
    "publisher",
    "contributor",
    "date",
    "type",
    "format",
    "identifier",
    "source",
    "language",
    "relation",
    "coverage",
    "rights",
)


@dataclass(frozen=True)
class CorpusRecord:
    """One record as the provider holds it; `deleted` records are tombstones."""

    identifier: str
    datestamp: datetime
    metadata: dict[str, list[str]] = field(default_factory=dict)
    sets: tuple[str, ...] = ()
    deleted: bool = False


def _utc(value: datetime) -> datetime:
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


class Corpus:
    """A thread-safe, mutable set of records with a clock that tests can move.

    Datestamps are whole seconds: OAI-PMH cannot express anything finer.
    """

    def __init__(self, sets: dict[str, str] | None = None) -> None:
        self._lock = threading.RLock()
        self._records: dict[str, CorpusRecord] = {}
        self.sets: dict[str, str] = dict(sets or {})
        self._clock: datetime | None = None
        # Bumped by every record change so that providers can cache sorted selections.
        self._version = 0

    @property
    def version(self) -> int:
        """A counter that every record change (add, update, delete, purge) increments."""
        return self._version

    # -- clock -----------------------------------------------------------------------------
    def now(self) -> datetime:
        """The provider's current time: the frozen clock if set, else the real UTC time."""
        with self._lock:
            value = self._clock or datetime.now(UTC)
        return value.replace(microsecond=0)

    def set_clock(self, value: datetime | None) -> None:
        """Freeze the provider's clock at `value` (None returns to real time)."""
        with self._lock:
            self._clock = _utc(value) if value is not None else None

    def advance_clock(self, **delta: float) -> datetime:
        """Move the frozen clock forward (freezing it at the current time first)."""
        with self._lock:
            self._clock = self.now() + timedelta(**delta)
            return self._clock

    # -- changes ---------------------------------------------------------------------------
    def add(
        self,
        identifier: str,
        metadata: dict[str, list[str]],
        sets: Iterable[str] = (),
        datestamp: datetime | None = None,
    ) -> CorpusRecord:
        """Add (or replace) a live record."""
        record = CorpusRecord(
            identifier=identifier,
            datestamp=_utc(datestamp) if datestamp else self.now(),
            metadata={key: list(values) for key, values in metadata.items()},
            sets=tuple(sets),
            deleted=False,
        )
        with self._lock:
            self._records[identifier] = record
            self._version += 1
        return record

    def update(
        self,
        identifier: str,
        metadata: dict[str, list[str]] | None = None,
        sets: Iterable[str] | None = None,
        datestamp: datetime | None = None,
    ) -> CorpusRecord:
        """Change a record (new datestamp); a tombstone becomes live again."""
        with self._lock:
            current = self._records[identifier]
            record = replace(
                current,
                datestamp=_utc(datestamp) if datestamp else self.now(),
                metadata=dict(metadata) if metadata is not None else current.metadata,
                sets=tuple(sets) if sets is not None else current.sets,
                deleted=False,
            )
            self._records[identifier] = record
            self._version += 1
        return record

    def delete(self, identifier: str, datestamp: datetime | None = None) -> CorpusRecord:
        """Turn a record into a tombstone."""
        with self._lock:
            current = self._records[identifier]
            record = replace(
                current,
                datestamp=_utc(datestamp) if datestamp else self.now(),
                metadata={},
                deleted=True,
            )
            self._records[identifier] = record
            self._version += 1
        return record

    def purge(self, identifier: str) -> None:
        """Remove a record without a trace, as servers with deletedRecord=no do."""
        with self._lock:
            self._records.pop(identifier, None)
            self._version += 1

    # -- queries ---------------------------------------------------------------------------
    def get(self, identifier: str) -> CorpusRecord | None:
        with self._lock:
            return self._records.get(identifier)

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)

    def select(
        self,
        from_: datetime | None = None,
        until: datetime | None = None,
        set_spec: str | None = None,
        include_deleted: bool = True,
    ) -> list[CorpusRecord]:
        """Records in [from_, until] (inclusive), in `set_spec` or a subset of it.

        Sorted by datestamp then identifier, so that paging is stable.
        """
        with self._lock:
            records = list(self._records.values())
        selected = [
            record
            for record in records
            if (from_ is None or record.datestamp >= _utc(from_))
            and (until is None or record.datestamp <= _utc(until))
            and (include_deleted or not record.deleted)
            and (set_spec is None or any(_in_set(spec, set_spec) for spec in record.sets))
        ]
        selected.sort(key=lambda record: (record.datestamp, record.identifier))
        return selected

    def live_identifiers(self) -> set[str]:
        with self._lock:
            return {r.identifier for r in self._records.values() if not r.deleted}

    def deleted_identifiers(self) -> set[str]:
        with self._lock:
            return {r.identifier for r in self._records.values() if r.deleted}

    def earliest_datestamp(self) -> datetime:
        with self._lock:
            if not self._records:
                return self.now()
            return min(record.datestamp for record in self._records.values())

    # -- synthetic data --------------------------------------------------------------------
    @classmethod
    def generate(
        cls,
        count: int,
        *,
        seed: int = 1,
        sets: dict[str, str] | None = None,
        start: datetime | None = None,
        step_seconds: int = 1,
        identifier_prefix: str = "oai:example.org:",
    ) -> Corpus:
        """A corpus of `count` synthetic oai_dc records, sizes and scripts like real DC."""
        if sets is None:
            sets = {"phys": "Physics", "phys:astro": "Astrophysics", "math": "Mathematics"}
        corpus = cls(sets=sets)
        rng = random.Random(seed)
        start = _utc(start or datetime(2020, 1, 1, tzinfo=UTC))
        set_specs = list(sets)
        for index in range(count):
            record_sets = (rng.choice(set_specs),) if set_specs else ()
            corpus.add(
                f"{identifier_prefix}{index:07d}",
                synthetic_metadata(rng, index),
                sets=record_sets,
                datestamp=start + timedelta(seconds=index * step_seconds),
            )
        return corpus


def _in_set(record_set: str, requested: str) -> bool:
    """Sets are hierarchical: `phys` includes `phys:astro`."""
    return record_set == requested or record_set.startswith(requested + ":")


_WORDS = (
    "quantum",
    "Žluťoučký",
    "kůň",
    "données",
    "système",
    "Straße",
    "analysis",
    "Ωmega",
    "spectral",
    "Ångström",
    "naïve",
    "café",
    "数据",
    "研究",
    "résumé",
    "graph",
    "lattice",
    "энергия",
    "модель",
    "protein",
    "galaxy",
    "Zürich",
    "Kraków",
    "climate",
    "neural",
)
_NAMES = (
    "Novák, Jan",
    "Dvořáková, Eliška",
    "Müller, Jürgen",
    "O'Brien, Siobhán",
    "Lefèvre, Zoé",
    "Иванов, Сергей",
    "山田, 太郎",
    "García Márquez, Ana",
    "Smith, John",
    "Øberg, Åsa",
)


def synthetic_metadata(rng: random.Random, index: int, revision: int = 0) -> dict[str, list[str]]:
    """Dublin Core metadata of a realistic size (about 1-2 kB serialised)."""

    def sentence(words: int) -> str:
        return " ".join(rng.choice(_WORDS) for _ in range(words)).capitalize()

    title = f"{sentence(rng.randint(4, 12))} #{index}"
    if revision:
        title += f" (rev. {revision})"
    return {
        "title": [title],
        "creator": [rng.choice(_NAMES) for _ in range(rng.randint(1, 4))],
        "subject": [rng.choice(_WORDS) for _ in range(rng.randint(1, 5))],
        "description": [sentence(rng.randint(30, 90)) + "."],
        "publisher": ["Example University Press"],
        "date": [f"{2000 + index % 25}-{1 + index % 12:02d}-{1 + index % 28:02d}"],
        "type": ["Text"],
        "identifier": [f"https://example.org/records/{index}", f"doi:10.1234/ex.{index}"],
        "language": [rng.choice(["en", "cs", "de", "fr"])],
        "rights": ["CC BY 4.0"],
    }
