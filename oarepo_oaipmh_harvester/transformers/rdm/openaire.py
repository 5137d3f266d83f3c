"""``oai_openaire_rdm``: OpenAIRE Guidelines v4 oaire:resource records -> InvenioRDM record data (being built, issue 35)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..base import TransformError
from .base import RDMTransformer

if TYPE_CHECKING:
    from ...protocol.records import OAIRecord


class OpenAIRERDMTransformer(RDMTransformer):
    name = "oai_openaire_rdm"

    def record_data(self, record: OAIRecord) -> dict[str, Any]:
        raise TransformError("oai_openaire_rdm is not built yet")
