"""Transformers turn a parsed OAI-PMH record into the data dict of the target service.

Decision owned here: which transformer a name stands for (configuration first, then entry
points), how a transformer reports warnings, and what the built-in ``oai_dc`` one makes of
Dublin Core.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, Protocol

from werkzeug.utils import import_string

if TYPE_CHECKING:
    from ..protocol.records import OAIRecord

TRANSFORMERS_ENTRY_POINT_GROUP = "oarepo_oaipmh_harvester.transformers"

DC_NAMESPACE = "http://purl.org/dc/elements/1.1/"


class TransformError(Exception):
    """The record cannot be turned into target data; the message is shown to operators."""


class Transformer(Protocol):
    """Anything with this method can be registered as a transformer."""

    def transform(self, record: OAIRecord) -> dict[str, Any]:
        """Return the data dict for the target service (raise TransformError if impossible)."""
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


class DublinCoreTransformer:
    """Every Dublin Core element as a list of strings under ``metadata``, in document order."""

    def transform(self, record: OAIRecord) -> dict[str, Any]:
        """Collect the ``dc:*`` children of ``oai_dc:dc``; order and Unicode are kept."""
        if record.metadata is None:
            raise TransformError(f"Record {record.identifier} has no metadata to transform.")
        metadata: dict[str, list[str]] = {}
        for element in record.metadata:
            tag = element.tag
            if not isinstance(tag, str) or not tag.startswith("{" + DC_NAMESPACE + "}"):
                continue  # comments, processing instructions, non-DC extensions
            text = "".join(element.itertext()).strip()
            if text:
                metadata.setdefault(tag[len(DC_NAMESPACE) + 2 :], []).append(text)
        if not metadata:
            raise TransformError(
                f"Record {record.identifier} has no Dublin Core elements in its metadata "
                f"(root element {record.metadata.tag!r})."
            )
        return {"metadata": metadata}


class TransformerRegistry:
    """Named transformers from the entry point group, overridden by configuration."""

    def __init__(self, configured: Mapping[str, Any] | None = None) -> None:
        self._factories: dict[str, Any] = {
            ep.name: ep for ep in entry_points(group=TRANSFORMERS_ENTRY_POINT_GROUP)
        }
        self._factories.update(configured or {})
        self._loaded: dict[str, Any] = {}  # name -> loaded class or instance

    def names(self) -> list[str]:
        """Names an operator may choose from."""
        return sorted(self._factories)

    def __contains__(self, name: str) -> bool:
        return name in self._factories

    def get(self, name: str) -> Transformer:
        """The transformer registered under `name` (KeyError names the known ones).

        A class is instantiated on every call: each writer (one per run, or per batch task)
        gets its own instance, so a transformer's caches (vocabulary look-ups) and its
        ``last_warnings`` live for one run and are never shared between threads.
        """
        if name not in self._loaded:
            try:
                factory = self._factories[name]
            except KeyError:
                raise KeyError(
                    f"Unknown transformer {name!r}; known: {', '.join(self.names())}."
                ) from None
            if hasattr(factory, "load"):  # an entry point
                factory = factory.load()
            elif isinstance(factory, str):
                factory = import_string(factory)
            self._loaded[name] = factory
        factory = self._loaded[name]
        return factory() if isinstance(factory, type) else factory
