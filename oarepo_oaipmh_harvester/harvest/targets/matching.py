"""A new harvested record's local twin, found by its identifiers besides the DOI.

Decision owned here: which local record a new source record is the same work as - one that
carries one of its identifiers (``metadata.identifiers``) of a scheme the harvester matches on,
the schemes tried in the harvester's order (``match_on``), the first scheme with a candidate
deciding, never a title - which local records may be such a twin (published, the latest version
of their record, not harvested by any harvester: those belong to their harvester), and that
several candidates are never a guess. The DOI is the PID store's (:mod:`.dois`) and is looked up
before this.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from invenio_db import db
from sqlalchemy.dialects import postgresql

from ...models import OAIHarvestedRecord

log = logging.getLogger(__name__)

_TRACKED = OAIHarvestedRecord.__table__

_CREATED_IN_BATCH: ContextVar[set[str] | None] = ContextVar("created_in_batch", default=None)
"""Pids the batch being written has created: harvested records whose tracking rows the batch
saves only at its end, so that the look-up cannot tell them from local records yet."""


@contextmanager
def records_created_in_a_batch() -> Iterator[None]:
    """While a batch is written: the records it creates are never twins of its other records."""
    token = _CREATED_IN_BATCH.set(set())
    try:
        yield
    finally:
        _CREATED_IN_BATCH.reset(token)


def note_created(pid: str) -> str:
    """A record the harvest has just created (see :func:`records_created_in_a_batch`); `pid`."""
    created = _CREATED_IN_BATCH.get()
    if created is not None:
        created.add(pid)
    return pid


class SeveralTwins(Exception):
    """More than one local record carries the identifier: nothing is written."""


class TwinRefused(Exception):
    """A local record carries the identifier and the harvester may not take it over."""


@dataclass(frozen=True)
class Twin:
    """The local record a new source record matched."""

    pid: str
    scheme: str
    identifier: str

    def describe(self) -> str:
        return f"local record {self.pid}, which has {self.scheme} {self.identifier}"


def identifiers_of(data: dict[str, Any], scheme: str) -> list[str]:
    """The record's identifiers of one scheme, in its order, normalised as InvenioRDM stores
    them (``2101.00001`` is kept as ``arXiv:2101.00001``)."""
    return [
        normalised(str(entry["identifier"]).strip(), scheme)
        for entry in (data.get("metadata") or {}).get("identifiers") or ()
        if entry.get("scheme") == scheme and str(entry.get("identifier") or "").strip()
    ]


def normalised(identifier: str, scheme: str) -> str:
    """`identifier` as idutils (InvenioRDM's normaliser) writes it; as given where it cannot."""
    try:
        import idutils

        return idutils.normalize_pid(identifier, scheme) or identifier
    except Exception:  # noqa: BLE001 - idutils missing, or a value it cannot read: as given
        return identifier


class LocalTwins:
    """Looks up the local twin of new records in one records service's table."""

    def __init__(
        self, model_cls: Any, schemes: Sequence[str], *, held_by_others_of: str | None = None
    ) -> None:
        self.model_cls = model_cls
        self.schemes = [scheme for scheme in schemes if scheme != "doi"]
        self.held_by_others_of = held_by_others_of
        """None: the candidates are records no harvester tracks; a harvester's id: those
        that another harvester's live row names (``dedupe``: :mod:`.shared`)."""

    def find(self, data: dict[str, Any]) -> Twin | None:
        """The one local record carrying an identifier of `data` (by the first scheme with a
        candidate); SeveralTwins when that scheme finds more than one."""
        if not self.schemes or db.engine.name != "postgresql":
            return None  # JSON containment is PostgreSQL's
        for scheme in self.schemes:
            for identifier in identifiers_of(data, scheme):
                pids = self._carrying(scheme, identifier)
                if len(pids) > 1:
                    raise SeveralTwins(
                        f"{len(pids)} local records have {scheme} {identifier}: "
                        f"{', '.join(pids)}; the harvested record was not written (a match is "
                        f"never a guess). Remove the identifier from all but one of them."
                    )
                if pids:
                    return Twin(pids[0], scheme, identifier)
        return None

    def query(self, scheme: str, identifier: str) -> sa.Select:
        """(pid, record) of the candidate rows, the newest version of each record first."""
        table = self.model_cls.__table__
        wanted = [{"scheme": scheme, "identifier": identifier}]
        # The column is JSON with a JSONB variant: taken as the JSONB it is, for @> and ->>.
        document = sa.type_coerce(table.c.json, postgresql.JSONB)
        pid = document["id"].astext
        # Written with ->, as the index of identifiers_index() is (not as JSONB subscripts,
        # which SQLAlchemy writes for PostgreSQL 14 and that the index does not serve).
        identifiers = sa.type_coerce(
            table.c.json.op("->")(sa.literal("metadata")).op("->")(sa.literal("identifiers")),
            postgresql.JSONB,
        )
        tracked = sa.exists().where(_TRACKED.c.local_pid == pid)
        if self.held_by_others_of is not None:
            tracked = tracked.where(
                _TRACKED.c.harvester_id != self.held_by_others_of,
                _TRACKED.c.deleted.is_(False),
            )
        conditions = [
            identifiers.contains(wanted),
            tracked if self.held_by_others_of is not None else ~tracked,
        ]
        if "deletion_status" in table.c:  # InvenioRDM: a tombstone is no twin
            conditions.append(table.c.deletion_status == "P")
        if "is_deleted" in table.c:
            conditions.append(table.c.is_deleted.is_(False))
        versioned = "parent_id" in table.c and "index" in table.c
        record = table.c.parent_id if versioned else table.c.id
        newest = table.c.index.desc() if versioned else table.c.id
        return sa.select(pid, record).where(*conditions).order_by(record, newest)

    def scale_warnings(self) -> list[str]:
        """Without an index on the records' identifiers each look-up reads the table whole:
        a first harvest of N records with identifiers would read N**2 rows."""
        if not self.schemes or db.engine.name != "postgresql":
            return []
        table = self.model_cls.__table__.name
        try:
            definitions = db.session.scalars(
                sa.text("SELECT indexdef FROM pg_indexes WHERE tablename = :table"),
                {"table": table},
            ).all()
        except Exception as error:  # noqa: BLE001 - a hint, never a reason not to harvest
            log.warning("Could not read the indices of %s: %r", table, error)
            return []
        if any("'identifiers'" in definition for definition in definitions):
            return []
        return [
            f"{table} has no index on its records' identifiers: matching each new record by "
            f"{', '.join(self.schemes)} (match_on) reads the table whole, so a first harvest "
            f"gets slower with every record. Create the index once: {identifiers_index(table)}"
        ]

    def _carrying(self, scheme: str, identifier: str) -> list[str]:
        """Pids of the records (latest version of each) that carry the identifier and that no
        harvester tracks."""
        latest: dict[Any, str] = {}
        for value, record in db.session.execute(self.query(scheme, identifier)).all():
            latest.setdefault(record, value)  # the newest version of each record first
        created = _CREATED_IN_BATCH.get() or set()
        return sorted(pid for pid in latest.values() if pid not in created)


def identifiers_index(table: str) -> str:
    """The statement that lets PostgreSQL answer a look-up by identifier from an index (the
    expression is the one :meth:`LocalTwins._carrying` asks with ``@>``)."""
    return (
        f"CREATE INDEX CONCURRENTLY ix_{table}_identifiers ON {table} USING gin "
        f"(((json -> 'metadata') -> 'identifiers') jsonb_path_ops);"
    )


def refuse_twin(twin: Twin) -> None:
    """TwinRefused: the harvester's policy does not take records over."""
    raise TwinRefused(
        f"The source record is the same work as {twin.describe()}; the harvested record was "
        f"not written and the local one was left as it is. Set the harvester's doi_conflicts "
        f"to take-over to let it update that record, or remove {twin.scheme} from its match_on."
    )
