"""Real MARC 21 records of real libraries and a real repository through ``marcxml_rdm``.

383 records (data/real/marc, sources and licences in its SOURCES.md): 50 each of the British
Library, the Deutsche Nationalbibliothek, George Washington University, the Library of
Congress, the National Library of Medicine, OCLC and Princeton (Library of Congress'
marc2bibframe2 test set) and 33 of INSPIRE-HEP's demo records (Invenio MARC). Every one is
transformed and checked against RDM's service schema and its record's JSON Schema; a sample
is harvested over OAI-PMH from the bundled provider into the real RDM records service.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("invenio_rdm_records")

from invenio_access.permissions import system_identity
from lxml import etree

from oarepo_oaipmh_harvester.transformers import TransformError
from oarepo_oaipmh_harvester.transformers.rdm.marcxml import MARCXMLRDMTransformer
from oarepo_oaipmh_harvester.transformers.rdm.marcxml_read import marc_record

from .test_datacite_to_rdm import harvested as oai_record
from .test_marcxml_to_rdm import (  # noqa: F401 (fixtures)
    app_config,
    marc_vocabularies,
    rdm_marc,
)
from .test_real_records import harvested

DATA = Path(__file__).parent / "data" / "real" / "marc"
# The MARC tests' vocabularies and the RDM service with them.
rdm_real = rdm_marc


def real_records() -> dict[str, str]:
    """OAI identifier -> the MARCXML ``record`` as a provider would serve it."""
    found = {}
    for path in sorted(DATA.glob("*.xml")):
        root = etree.parse(str(path)).getroot()
        records = [
            r for r in root if isinstance(r.tag, str) and etree.QName(r).localname == "record"
        ]
        for number, element in enumerate(records):
            found[f"oai:real.marc:{path.stem}-{number + 1}"] = etree.tostring(
                element, encoding="unicode"
            )
    return found


RECORDS = real_records()
TITLED = {
    identifier: document
    for identifier, document in RECORDS.items()
    if marc_record(etree.fromstring(document), identifier).get("245")
}
"""The bibliographic records: INSPIRE's demo set holds 17 authority records too (people,
journals, a conference, an institution), which have no 245 and fail, as they must."""


def test_every_real_marc_record_is_valid_rdm_data(rdm_real):
    from invenio_rdm_records.records.api import RDMDraft

    transformer = MARCXMLRDMTransformer()
    valid, failed, warned, invalid = [], {}, Counter(), {}
    for identifier, document in RECORDS.items():
        try:
            data = transformer.transform(oai_record(document, identifier=identifier))
        except TransformError as error:
            failed[identifier] = str(error)
            continue
        try:
            loaded, errors = rdm_real.schema.load(data, context={"identity": system_identity})
            RDMDraft({"$schema": RDMDraft.schema.value, **loaded}).validate()
        except Exception as error:
            invalid[identifier] = str(error)[:300]
            continue
        if errors:
            invalid[identifier] = str(errors)[:300]
            continue
        valid.append(identifier)
        warned.update(w.split(":", 1)[0] for w in transformer.last_warnings)
    by_source = Counter(identifier.rsplit("-", 1)[0] for identifier in valid)
    print(f"\n{len(valid)} of {len(RECORDS)} valid; by source {dict(by_source)}")
    print(f"failed: {failed}")
    print(f"invalid: {invalid}")
    print(f"most frequent warnings: {warned.most_common(15)}")
    assert len(RECORDS) == 383 and len(TITLED) == 366
    assert set(valid) == set(TITLED) and not invalid
    assert set(failed) == set(RECORDS) - set(TITLED)
    assert all("has no title of at least 3 characters in 245" in e for e in failed.values())


def test_pymarc_costs_little_of_a_transform(rdm_real):
    """Reading a record with pymarc (built from the element the harvester parsed) against a
    direct lxml walk, and pymarc's own SAX reader on the serialised record, per record of
    the real set; against the whole transform and RDM's create and publish (a record's
    harvest). Numbers in docs/marcxml.rst."""
    import io

    import pymarc

    records = [oai_record(document) for document in TITLED.values()]
    elements = [record.metadata for record in records]

    def timed(work) -> float:
        started = time.perf_counter()
        for element in elements:
            work(element)
        return (time.perf_counter() - started) / len(elements) * 1000

    def lxml_walk(element):
        fields: dict[str, list] = {}
        for child in element:
            fields.setdefault(child.get("tag"), []).append(
                [(sub.get("code"), sub.text) for sub in child]
            )
        return fields

    def sax(element):
        return pymarc.parse_xml_to_array(io.BytesIO(etree.tostring(element)))

    pymarc_ms = timed(lambda element: marc_record(element, "x"))
    lxml_ms = timed(lxml_walk)
    sax_ms = timed(sax)
    transformer = MARCXMLRDMTransformer()
    for record in records[:20]:  # vocabulary answers cached, as in a run
        transformer.transform(record)
    started = time.perf_counter()
    for record in records:
        transformer.transform(record)
    transform_ms = (time.perf_counter() - started) / len(records) * 1000
    # The rest of a record's harvest: RDM's create and publish (here, without the network).
    started = time.perf_counter()
    for record in records[:5]:
        draft = rdm_real.create(system_identity, transformer.transform(record))
        rdm_real.publish(system_identity, draft.id)
    publish_ms = (time.perf_counter() - started) / 5 * 1000
    print(
        f"\nper record: pymarc Record from the element {pymarc_ms:.3f} ms, lxml walk "
        f"{lxml_ms:.3f} ms, pymarc SAX on the serialised record {sax_ms:.3f} ms; whole "
        f"transform {transform_ms:.2f} ms; RDM create and publish {publish_ms:.0f} ms"
    )
    # pymarc against a record's harvest time (transform, create, publish): far below 10 %.
    assert pymarc_ms < 0.1 * (transform_ms + publish_ms)
    assert pymarc_ms < sax_ms


def sample() -> dict[str, str]:
    """Two records of each source (three of INSPIRE's): a harvest into RDM in one test
    transaction slows with every record it holds."""
    chosen: dict[str, str] = {}
    for stem in sorted({identifier.rsplit("-", 1)[0] for identifier in TITLED}):
        of_source = [i for i in TITLED if i.rsplit("-", 1)[0] == stem]
        for identifier in of_source[: 3 if "inspire" in stem else 2]:
            chosen[identifier] = TITLED[identifier]
    return chosen


def test_a_sample_of_real_marc_records_is_harvested_and_published(rdm_real):
    documents = sample()
    assert len(documents) <= 20

    summary, rows, published = harvested(rdm_real, documents, "marcxml", "marcxml_rdm")

    assert (summary.counts.created, summary.counts.failed) == (len(documents), 0)
    for identifier, document in documents.items():
        metadata = published[identifier]
        marc = marc_record(etree.fromstring(document), identifier)
        assert len(metadata["title"]) >= 3, identifier
        assert metadata["creators"], identifier
        if marc.get("100", "110", "111"):
            assert not any(w.startswith("Creators:") for w in rows[identifier].warnings or [])
        assert metadata["publication_date"], identifier
        links = [u for f in marc.get("856") for u in f.get_subfields("u") if u.startswith("http")]
        related = {r["identifier"] for r in metadata.get("related_identifiers", [])}
        assert set(links) <= related, identifier
