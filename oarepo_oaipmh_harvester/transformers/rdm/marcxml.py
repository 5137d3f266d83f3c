"""``marcxml_rdm``: MARC 21 bibliographic records (MARCXML) -> InvenioRDM record data (being built, issue 35)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..base import TransformError
from .base import RDMTransformer

if TYPE_CHECKING:
    from ...protocol.records import OAIRecord


class MARCXMLRDMTransformer(RDMTransformer):
    name = "marcxml_rdm"

    def record_data(self, record: OAIRecord) -> dict[str, Any]:
        raise TransformError("marcxml_rdm is not built yet")
