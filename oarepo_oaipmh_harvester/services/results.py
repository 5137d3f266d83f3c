"""Service results: items and pages read from SQL (harvesters and their records are not indexed)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from invenio_records_resources.services.records.results import RecordItem, RecordList


@dataclass
class SQLPage:
    """One page of rows and the number of rows matching the query on all pages."""

    rows: list[Any]
    total: int
    aggregations: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class SQLItem(RecordItem):
    """One row projected through the service schema, with its links.

    `record` is what the links and the schema see: the row itself, or a projection of it
    prepared by the service (`prepare`).
    """

    @property
    def id(self) -> str:
        return str(self._record.id)

    @property
    def data(self) -> dict[str, Any]:
        if self._data:
            return self._data
        self._data = self._schema.dump(
            self._record, context={"identity": self._identity, "record": self._record}
        )
        if self._links_tpl:
            self._data["links"] = self.links
        return self._data


class HarvesterItem(SQLItem):
    """A harvester: ``.data`` / ``.to_dict()`` (what the schema dumps) and ``.links``."""


class SQLList(RecordList):
    """A page of rows: `hits`, `total`, `aggregations` and pagination links like a search."""

    def __init__(self, service: Any, identity: Any, results: SQLPage, **kwargs: Any) -> None:
        self._prepare = kwargs.pop("prepare", lambda row: row)
        super().__init__(service, identity, results, **kwargs)

    @property
    def total(self) -> int:
        return self._results.total

    @property
    def aggregations(self) -> dict[str, Any] | None:
        return self._results.aggregations

    @property
    def items(self) -> Iterator[Any]:
        """The rows, prepared for the schema and the links."""
        for row in self._results.rows:
            yield self._prepare(row)

    @property
    def hits(self) -> Iterator[dict[str, Any]]:
        for record in self.items:
            projection = self._schema.dump(
                record, context={"identity": self._identity, "record": record}
            )
            if self._links_item_tpl:
                projection["links"] = self._links_item_tpl.expand(self._identity, record)
            yield projection
