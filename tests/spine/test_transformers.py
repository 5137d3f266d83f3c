"""The oai_dc transformer and the transformer registry."""

import pytest
from lxml import etree

from oarepo_oaipmh_harvester.protocol.records import OAIRecord
from oarepo_oaipmh_harvester.transformers import (
    DublinCoreTransformer,
    TransformerRegistry,
    TransformError,
)

DC = """<oai_dc:dc xmlns:oai_dc="http://www.openarchives.org/OAI/2.0/oai_dc/"
    xmlns:dc="http://purl.org/dc/elements/1.1/">
  <dc:title>Žluťoučký kůň &amp; 数据</dc:title>
  <dc:creator>Dvořáková, Eliška</dc:creator>
  <dc:creator>Müller, Jürgen</dc:creator>
  <dc:subject>physics</dc:subject>
  <!-- a comment -->
  <dc:creator>Иванов, Сергей</dc:creator>
  <dc:description>  padded  </dc:description>
  <dc:rights></dc:rights>
</oai_dc:dc>"""


def record(metadata):
    return OAIRecord(
        identifier="oai:x:1",
        datestamp="2024-01-01",
        deleted=False,
        set_specs=(),
        metadata=metadata,
        xml="<record/>",
    )


def test_every_dc_element_as_ordered_list_of_strings():
    data = DublinCoreTransformer().transform(record(etree.fromstring(DC)))
    assert data == {
        "metadata": {
            "title": ["Žluťoučký kůň & 数据"],
            "creator": ["Dvořáková, Eliška", "Müller, Jürgen", "Иванов, Сергей"],
            "subject": ["physics"],
            "description": ["padded"],
        }
    }


def test_missing_metadata_is_a_clear_transform_error():
    with pytest.raises(TransformError, match="oai:x:1"):
        DublinCoreTransformer().transform(record(None))
    with pytest.raises(TransformError, match="no Dublin Core"):
        DublinCoreTransformer().transform(record(etree.fromstring("<mods/>")))


def test_registry_entry_points_and_configuration():
    class Upper:
        def transform(self, rec):
            return {"metadata": {"title": ["X"]}}

    registry = TransformerRegistry({"upper": Upper})
    assert {"oai_dc", "upper"} <= set(registry.names())
    assert isinstance(registry.get("oai_dc"), DublinCoreTransformer)
    assert registry.get("upper").transform(None) == {"metadata": {"title": ["X"]}}
    with pytest.raises(
        KeyError,
        match="known: lido_rdm, marcxml_rdm, oai_datacite_rdm, oai_dc, oai_dc_rdm, "
        "oai_openaire_rdm, upper",
    ):
        registry.get("marcxml")
