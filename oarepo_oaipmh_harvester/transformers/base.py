"""What a transformer is to the engine: the protocols it implements and how it reports.

Decision owned here: the shape of a transformer (``transform(record)``) and of a later step of
a chain (``adjust(record, data)``), the one exception that fails a record, and how a
transformer reports the values it gave up (warnings for the record's tracking row).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..protocol.records import OAIRecord


class TransformError(Exception):
    """The record cannot be turned into target data; the message is shown to operators."""


class Transformer(Protocol):
    """Anything with this method can be registered as a transformer."""

    def transform(self, record: OAIRecord) -> dict[str, Any]:
        """Return the data dict for the target service (raise TransformError if impossible)."""
        ...


class Adjuster(Protocol):
    """A later step of a chain: changes what the steps before it made of the record."""

    def adjust(self, record: OAIRecord, data: dict[str, Any]) -> dict[str, Any]:
        """Return the data for the next step (raise TransformError to fail the record)."""
        ...


def transform_warnings(transformer: Transformer) -> list[str]:
    """Warnings of the record `transformer` transformed last (values it could not map).

    A transformer that maps values lossily sets ``last_warnings`` (a list of strings) in each
    ``transform`` call; they belong on that record's tracking row next to the protocol's
    warnings. An attribute rather than a key in the returned data, so that data reaches the
    target service unchanged even where the writer does not read it.
    """
    return list(getattr(transformer, "last_warnings", None) or ())


def with_transform_warnings(
    warnings: list[str] | None, transformer: Transformer
) -> list[str] | None:
    """`warnings` of a tracking row with the transformer's ones added (None when empty)."""
    merged = [*(warnings or ()), *transform_warnings(transformer)]
    return merged or None
