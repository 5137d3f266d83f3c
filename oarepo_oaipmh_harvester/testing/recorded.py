"""Records recorded from real providers (tests/rdm/data/real), served again by the bundled
provider: for the tests of real records and the benchmark's formats phase.

A recorded file is an OAI-PMH response (its live ``record`` elements), a collection (MARCXML's
``collection``: its records) or one document (an OpenAIRE ``resource``, a LIDO record).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

from lxml import etree

from .corpus import Corpus
from .provider import served_document_key

OAI = "{http://www.openarchives.org/OAI/2.0/}"
COLLECTIONS = {"{http://www.loc.gov/MARC21/slim}collection"}


def recorded(folder: Path) -> Iterator[tuple[str, str, etree._Element]]:
    """(file stem, OAI identifier, ``<record>`` element) of every live record recorded in
    `folder`'s OAI-PMH responses."""
    for path in sorted(folder.glob("*.xml")):
        for number, record in enumerate(etree.parse(str(path)).iter(f"{OAI}record")):
            header = record.find(f"{OAI}header")
            if header.get("status") == "deleted":
                continue
            identifier = (header.findtext(f"{OAI}identifier") or "").strip()
            # One provider served a record with an empty identifier.
            yield path.stem, identifier or f"oai:{path.stem}:{number}", record


def served(record: etree._Element) -> str:
    """What the provider put in ``<metadata>``, as it did."""
    metadata = record.find(f"{OAI}metadata")
    return "".join(
        etree.tostring(child, encoding="unicode", with_tail=False)
        for child in metadata
        if isinstance(child.tag, str)
    )


def recorded_documents(folder: Path) -> dict[str, str]:
    """Every live record's metadata document in `folder`, by an OAI identifier, whatever the
    files hold: OAI-PMH responses, collections or single documents."""
    documents: dict[str, str] = {}
    for path in sorted(folder.glob("*.xml")):
        root = etree.parse(str(path)).getroot()
        if root.tag == f"{OAI}OAI-PMH":
            continue
        members = list(root) if root.tag in COLLECTIONS else [root]
        for number, member in enumerate(m for m in members if isinstance(m.tag, str)):
            documents[f"oai:{path.stem}:{number}"] = etree.tostring(member, encoding="unicode")
    documents.update((identifier, served(record)) for _, identifier, record in recorded(folder))
    return documents


def corpus_of(documents: dict[str, str], prefix: str) -> Corpus:
    """A corpus that serves `documents` under `prefix`, a minute apart."""
    corpus = Corpus()
    start = datetime(2024, 1, 1, tzinfo=UTC)
    for number, (identifier, document) in enumerate(documents.items()):
        corpus.add(
            identifier,
            {"title": [identifier], served_document_key(prefix): [document]},
            datestamp=start + timedelta(minutes=number),
        )
    corpus.set_clock(start + timedelta(days=30))
    return corpus
