"""The built-in ``oai_dc`` transformer.

Decision owned here: what the plain ``oai_dc`` transformer makes of Dublin Core - every
element as a list of strings, in document order, Unicode intact - for any target service that
stores Dublin Core as it is (and as the first reading of the RDM ``oai_dc_rdm`` transformer).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import TransformError

if TYPE_CHECKING:
    from ..protocol.records import OAIRecord

DC_NAMESPACE = "http://purl.org/dc/elements/1.1/"
_DC_TAG_PREFIX = "{" + DC_NAMESPACE + "}"


class DublinCoreTransformer:
    """Every Dublin Core element as a list of strings under ``metadata``, in document order."""

    def transform(self, record: OAIRecord) -> dict[str, Any]:
        """Collect the ``dc:*`` children of ``oai_dc:dc``; order and Unicode are kept."""
        if record.metadata is None:
            raise TransformError(f"Record {record.identifier} has no metadata to transform.")
        metadata: dict[str, list[str]] = {}
        for element in record.metadata:
            tag = element.tag
            if not isinstance(tag, str) or not tag.startswith(_DC_TAG_PREFIX):
                continue  # comments, processing instructions, non-DC extensions
            # Most elements are a single text node: reading it is several times cheaper
            # than joining itertext(), which is left for mixed content.
            text = ("".join(element.itertext()) if len(element) else element.text or "").strip()
            if text:
                metadata.setdefault(tag[len(_DC_TAG_PREFIX) :], []).append(text)
        if not metadata:
            raise TransformError(
                f"Record {record.identifier} has no Dublin Core elements in its metadata "
                f"(root element {record.metadata.tag!r})."
            )
        return {"metadata": metadata}
