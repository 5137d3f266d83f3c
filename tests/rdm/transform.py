"""A minimal oai_dc -> RDM transformer for these tests only (the real one is a later step)."""

from __future__ import annotations

from typing import Any

from oarepo_oaipmh_harvester.protocol.records import OAIRecord
from oarepo_oaipmh_harvester.transformers import DublinCoreTransformer

RESOURCE_TYPE = "publication"


def _creator(name: str) -> dict[str, Any]:
    family, _, given = (part.strip() for part in name.partition(","))
    person = {"type": "personal", "family_name": family}
    if given:
        person["given_name"] = given
    return {"person_or_org": person}


class MinimalRDMTransformer:
    """Title, creators "Family, Given", publication date, description; metadata only.

    Elements the record lacks are left out, so that RDM reports them as errors.
    """

    def transform(self, record: OAIRecord) -> dict[str, Any]:
        dc = DublinCoreTransformer().transform(record)["metadata"]
        metadata: dict[str, Any] = {
            "resource_type": {"id": RESOURCE_TYPE},
            "creators": [_creator(name) for name in dc.get("creator", [])],
        }
        if dc.get("title"):
            metadata["title"] = dc["title"][0]
        if dc.get("date"):
            metadata["publication_date"] = dc["date"][0]
        if dc.get("description"):
            metadata["description"] = dc["description"][0]
        return {
            "access": {"record": "public", "files": "public"},
            "files": {"enabled": False},
            "metadata": metadata,
        }
