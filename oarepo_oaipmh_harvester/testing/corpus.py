"""An in-memory corpus of Dublin Core records that test providers serve (and of LIDO museum
objects, served under the ``lido`` prefix).

The corpus is the single source of truth that every test data provider (our own quirky
provider and the independent PyPI implementations) serves, so that tests can compare what
landed in the target service with what the provider holds.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

DC_ELEMENTS = (
    "title",
    "creator",
    "subject",
    "description",
    "publisher",
    "contributor",
    "date",
    "type",
    "format",
    "identifier",
    "source",
    "language",
    "relation",
    "coverage",
    "rights",
)


@dataclass(frozen=True)
class CorpusRecord:
    """One record as the provider holds it; `deleted` records are tombstones."""

    identifier: str
    datestamp: datetime
    metadata: dict[str, list[str]] = field(default_factory=dict)
    sets: tuple[str, ...] = ()
    deleted: bool = False


def _utc(value: datetime) -> datetime:
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


class Corpus:
    """A thread-safe, mutable set of records with a clock that tests can move.

    Datestamps are whole seconds: OAI-PMH cannot express anything finer.
    """

    def __init__(self, sets: dict[str, str] | None = None) -> None:
        self._lock = threading.RLock()
        self._records: dict[str, CorpusRecord] = {}
        self.sets: dict[str, str] = dict(sets or {})
        self._clock: datetime | None = None
        # Bumped by every record change so that providers can cache sorted selections.
        self._version = 0

    @property
    def version(self) -> int:
        """A counter that every record change (add, update, delete, purge) increments."""
        return self._version

    # -- clock -----------------------------------------------------------------------------
    def now(self) -> datetime:
        """The provider's current time: the frozen clock if set, else the real UTC time."""
        with self._lock:
            value = self._clock or datetime.now(UTC)
        return value.replace(microsecond=0)

    def set_clock(self, value: datetime | None) -> None:
        """Freeze the provider's clock at `value` (None returns to real time)."""
        with self._lock:
            self._clock = _utc(value) if value is not None else None

    def advance_clock(self, **delta: float) -> datetime:
        """Move the frozen clock forward (freezing it at the current time first)."""
        with self._lock:
            self._clock = self.now() + timedelta(**delta)
            return self._clock

    # -- changes ---------------------------------------------------------------------------
    def add(
        self,
        identifier: str,
        metadata: dict[str, list[str]],
        sets: Iterable[str] = (),
        datestamp: datetime | None = None,
    ) -> CorpusRecord:
        """Add (or replace) a live record."""
        record = CorpusRecord(
            identifier=identifier,
            datestamp=_utc(datestamp) if datestamp else self.now(),
            metadata={key: list(values) for key, values in metadata.items()},
            sets=tuple(sets),
            deleted=False,
        )
        with self._lock:
            self._records[identifier] = record
            self._version += 1
        return record

    def update(
        self,
        identifier: str,
        metadata: dict[str, list[str]] | None = None,
        sets: Iterable[str] | None = None,
        datestamp: datetime | None = None,
    ) -> CorpusRecord:
        """Change a record (new datestamp); a tombstone becomes live again."""
        with self._lock:
            current = self._records[identifier]
            record = replace(
                current,
                datestamp=_utc(datestamp) if datestamp else self.now(),
                metadata=dict(metadata) if metadata is not None else current.metadata,
                sets=tuple(sets) if sets is not None else current.sets,
                deleted=False,
            )
            self._records[identifier] = record
            self._version += 1
        return record

    def delete(self, identifier: str, datestamp: datetime | None = None) -> CorpusRecord:
        """Turn a record into a tombstone."""
        with self._lock:
            current = self._records[identifier]
            record = replace(
                current,
                datestamp=_utc(datestamp) if datestamp else self.now(),
                metadata={},
                deleted=True,
            )
            self._records[identifier] = record
            self._version += 1
        return record

    def purge(self, identifier: str) -> None:
        """Remove a record without a trace, as servers with deletedRecord=no do."""
        with self._lock:
            self._records.pop(identifier, None)
            self._version += 1

    # -- queries ---------------------------------------------------------------------------
    def get(self, identifier: str) -> CorpusRecord | None:
        with self._lock:
            return self._records.get(identifier)

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)

    def select(
        self,
        from_: datetime | None = None,
        until: datetime | None = None,
        set_spec: str | None = None,
        include_deleted: bool = True,
    ) -> list[CorpusRecord]:
        """Records in [from_, until] (inclusive), in `set_spec` or a subset of it.

        Sorted by datestamp then identifier, so that paging is stable.
        """
        with self._lock:
            records = list(self._records.values())
        selected = [
            record
            for record in records
            if (from_ is None or record.datestamp >= _utc(from_))
            and (until is None or record.datestamp <= _utc(until))
            and (include_deleted or not record.deleted)
            and (set_spec is None or any(_in_set(spec, set_spec) for spec in record.sets))
        ]
        selected.sort(key=lambda record: (record.datestamp, record.identifier))
        return selected

    def live_identifiers(self) -> set[str]:
        with self._lock:
            return {r.identifier for r in self._records.values() if not r.deleted}

    def deleted_identifiers(self) -> set[str]:
        with self._lock:
            return {r.identifier for r in self._records.values() if r.deleted}

    def earliest_datestamp(self) -> datetime:
        with self._lock:
            if not self._records:
                return self.now()
            return min(record.datestamp for record in self._records.values())

    # -- synthetic data --------------------------------------------------------------------
    @classmethod
    def generate(
        cls,
        count: int,
        *,
        seed: int = 1,
        sets: dict[str, str] | None = None,
        start: datetime | None = None,
        step_seconds: int = 1,
        identifier_prefix: str = "oai:example.org:",
    ) -> Corpus:
        """A corpus of `count` synthetic oai_dc records, sizes and scripts like real DC."""
        if sets is None:
            sets = {"phys": "Physics", "phys:astro": "Astrophysics", "math": "Mathematics"}
        corpus = cls(sets=sets)
        rng = random.Random(seed)
        start = _utc(start or datetime(2020, 1, 1, tzinfo=UTC))
        set_specs = list(sets)
        for index in range(count):
            record_sets = (rng.choice(set_specs),) if set_specs else ()
            corpus.add(
                f"{identifier_prefix}{index:07d}",
                synthetic_metadata(rng, index),
                sets=record_sets,
                datestamp=start + timedelta(seconds=index * step_seconds),
            )
        return corpus


def _in_set(record_set: str, requested: str) -> bool:
    """Sets are hierarchical: `phys` includes `phys:astro`."""
    return record_set == requested or record_set.startswith(requested + ":")


_WORDS = (
    "quantum",
    "Žluťoučký",
    "kůň",
    "données",
    "système",
    "Straße",
    "analysis",
    "Ωmega",
    "spectral",
    "Ångström",
    "naïve",
    "café",
    "数据",
    "研究",
    "résumé",
    "graph",
    "lattice",
    "энергия",
    "модель",
    "protein",
    "galaxy",
    "Zürich",
    "Kraków",
    "climate",
    "neural",
)
_NAMES = (
    "Novák, Jan",
    "Dvořáková, Eliška",
    "Müller, Jürgen",
    "O'Brien, Siobhán",
    "Lefèvre, Zoé",
    "Иванов, Сергей",
    "山田, 太郎",
    "García Márquez, Ana",
    "Smith, John",
    "Øberg, Åsa",
)


def synthetic_metadata(rng: random.Random, index: int, revision: int = 0) -> dict[str, list[str]]:
    """Dublin Core metadata of a realistic size (about 1-2 kB serialised)."""

    def sentence(words: int) -> str:
        return " ".join(rng.choice(_WORDS) for _ in range(words)).capitalize()

    title = f"{sentence(rng.randint(4, 12))} #{index}"
    if revision:
        title += f" (rev. {revision})"
    return {
        "title": [title],
        "creator": [rng.choice(_NAMES) for _ in range(rng.randint(1, 4))],
        "subject": [rng.choice(_WORDS) for _ in range(rng.randint(1, 5))],
        "description": [sentence(rng.randint(30, 90)) + "."],
        "publisher": ["Example University Press"],
        "date": [f"{2000 + index % 25}-{1 + index % 12:02d}-{1 + index % 28:02d}"],
        "type": ["Text"],
        "identifier": [f"https://example.org/records/{index}", f"doi:10.1234/ex.{index}"],
        "language": [rng.choice(["en", "cs", "de", "fr"])],
        "rights": ["CC BY 4.0"],
    }


# -- LIDO: museum objects ------------------------------------------------------------------------
LIDO_NS = "http://www.lido-schema.org"
LIDO_SCHEMAS = {
    "1.0": "http://www.lido-schema.org/schema/v1.0/lido-v1.0.xsd",
    "1.1": "http://www.lido-schema.org/schema/v1.1/lido-v1.1.xsd",
}
_LIDO_OPEN = (
    '<lido:{root} xmlns:lido="http://www.lido-schema.org" xmlns:gml="http://www.opengis.net/gml" '
    'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
    'xsi:schemaLocation="http://www.lido-schema.org {schema}">'
)


def _x(value: object) -> str:
    from xml.sax.saxutils import escape

    return escape(str(value), {'"': "&quot;"})


def _lido_event(
    kind: str,
    date: tuple[str, str] | None = None,
    display: str = "",
    actors: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (),
    place: tuple[str, str, str] | None = None,
    materials: str = "",
    extra: str = "",
) -> str:
    """One ``eventSet``: actors are (name, lido:type, role, actorIDs "source|value"), a place
    (name, gml pos "lat lon", placeID)."""
    parts = [f"<lido:eventSet><lido:displayEvent>{_x(kind)}</lido:displayEvent><lido:event>"]
    parts.append(f"<lido:eventType><lido:term>{_x(kind)}</lido:term></lido:eventType>")
    for name, kind_, role, ids in actors:
        ids_xml = "".join(
            f'<lido:actorID lido:type="URI" lido:source="{_x(s)}">{_x(v)}</lido:actorID>'
            for s, v in (i.split("|", 1) for i in ids)
        )
        role_xml = (
            f"<lido:roleActor><lido:term>{_x(role)}</lido:term></lido:roleActor>" if role else ""
        )
        parts.append(
            f"<lido:eventActor><lido:displayActorInRole>{_x(name)}</lido:displayActorInRole>"
            f'<lido:actorInRole><lido:actor lido:type="{_x(kind_)}">{ids_xml}'
            f'<lido:nameActorSet><lido:appellationValue lido:pref="preferred">{_x(name)}'
            f"</lido:appellationValue></lido:nameActorSet></lido:actor>{role_xml}"
            "</lido:actorInRole></lido:eventActor>"
        )
    if date or display:
        parts.append("<lido:eventDate>")
        if display:
            parts.append(f"<lido:displayDate>{_x(display)}</lido:displayDate>")
        if date:
            parts.append(
                f"<lido:date><lido:earliestDate>{date[0]}</lido:earliestDate>"
                f"<lido:latestDate>{date[1]}</lido:latestDate></lido:date>"
            )
        parts.append("</lido:eventDate>")
    if place:
        name, pos, place_id = place
        id_xml = f'<lido:placeID lido:type="URI">{_x(place_id)}</lido:placeID>' if place_id else ""
        gml = f"<lido:gml><gml:Point><gml:pos>{pos}</gml:pos></gml:Point></lido:gml>" if pos else ""
        parts.append(
            f"<lido:eventPlace><lido:displayPlace>{_x(name)}</lido:displayPlace><lido:place>"
            f"{id_xml}<lido:namePlaceSet><lido:appellationValue>{_x(name)}</lido:appellationValue>"
            f"</lido:namePlaceSet>{gml}</lido:place></lido:eventPlace>"
        )
    if materials:
        parts.append(
            f"<lido:eventMaterialsTech><lido:displayMaterialsTech>{_x(materials)}"
            "</lido:displayMaterialsTech></lido:eventMaterialsTech>"
        )
    parts.append(f"{extra}</lido:event></lido:eventSet>")
    return "".join(parts)


def _lido_resource(link: str, kind: str = "image", rights: str = "") -> str:
    rights_xml = (
        f"<lido:rightsResource><lido:rightsType><lido:term>{_x(rights)}</lido:term>"
        "</lido:rightsType></lido:rightsResource>"
        if rights
        else ""
    )
    return (
        f'<lido:resourceSet><lido:resourceRepresentation lido:type="image_master">'
        f"<lido:linkResource>{_x(link)}</lido:linkResource></lido:resourceRepresentation>"
        f"<lido:resourceType><lido:term>{_x(kind)}</lido:term></lido:resourceType>"
        f"{rights_xml}</lido:resourceSet>"
    )


def lido_document(
    number: str,
    *,
    version: str = "1.1",
    wrapped: bool = True,
    title: str = "Still life with a lobster",
    work_type: str = "painting",
    events: tuple[str, ...] | None = None,
    resources: tuple[str, ...] | None = None,
    description: str = "A lobster, a silver jug and a lemon on a table.",
    lang: str = "en",
    further: str = "",
) -> str:
    """A synthetic LIDO record (1.0 or 1.1 by its schemaLocation; in a ``lidoWrap`` or
    bare) of a painting, with every element the ``lido_rdm`` mapping reads; `events` and
    `resources` replace the default ones (``_lido_event`` / ``_lido_resource`` markup),
    `further` is a second ``descriptiveMetadata`` block."""
    if events is None:
        events = (
            _lido_event(
                "Production",
                ("1643", "1645"),
                "ca. 1643-1645",
                (
                    (
                        "Heda, Willem Claesz.",
                        "person",
                        "painter",
                        ("GND|http://d-nb.info/gnd/118547739",),
                    ),
                    ("Guild of St Luke", "corporation", "commissioner", ()),
                ),
                ("Haarlem", "52.38 4.64", "http://sws.geonames.org/2755003/"),
                "oil on panel",
                "<lido:culture><lido:term>Dutch Golden Age</lido:term></lido:culture>",
            ),
            _lido_event("Acquisition", ("1901-05-02", "1901-05-02"), place=("Amsterdam", "", "")),
            _lido_event("Finding", ("1899", "1899")),
        )
    if resources is None:
        resources = (
            _lido_resource(
                f"https://images.museum.example.org/{number}.jpg", "image", "CC BY-SA 4.0"
            ),
            _lido_resource(f"https://images.museum.example.org/{number}-back.tif", "image"),
        )
    root = "lidoWrap" if wrapped else "lido"
    open_ = _LIDO_OPEN.format(root=root, schema=LIDO_SCHEMAS[version])
    if wrapped:
        open_ += "<lido:lido>"
    value_lang = f' xml:lang="{lang}"' if version == "1.1" else ""
    return "".join(
        (
            open_,
            f'<lido:lidoRecID lido:type="local" lido:source="Example Museum">DE-MUS-1/{number}</lido:lidoRecID>',
            '<lido:category><lido:conceptID lido:type="URI">http://www.cidoc-crm.org/crm-concepts/E22</lido:conceptID>',
            "<lido:term>Man-Made Object</lido:term></lido:category>",
            f'<lido:descriptiveMetadata xml:lang="{lang}"><lido:objectClassificationWrap>',
            f"<lido:objectWorkTypeWrap><lido:objectWorkType><lido:term>{_x(work_type)}</lido:term>",
            "</lido:objectWorkType></lido:objectWorkTypeWrap><lido:classificationWrap><lido:classification>",
            "<lido:term>still life</lido:term></lido:classification></lido:classificationWrap>",
            "</lido:objectClassificationWrap><lido:objectIdentificationWrap><lido:titleWrap><lido:titleSet>",
            f'<lido:appellationValue lido:pref="preferred"{value_lang}>{_x(title)}</lido:appellationValue>',
            '<lido:appellationValue lido:pref="alternate" xml:lang="nl">Stilleven met kreeft</lido:appellationValue>',
            '</lido:titleSet></lido:titleWrap><lido:repositoryWrap><lido:repositorySet lido:type="current">',
            "<lido:repositoryName><lido:legalBodyName><lido:appellationValue>Example Museum</lido:appellationValue>",
            f'</lido:legalBodyName></lido:repositoryName><lido:workID lido:type="inventory number">INV {number}</lido:workID>',
            "</lido:repositorySet></lido:repositoryWrap><lido:objectDescriptionWrap><lido:objectDescriptionSet>",
            f"<lido:descriptiveNoteValue{value_lang}>{_x(description)}</lido:descriptiveNoteValue>",
            "</lido:objectDescriptionSet></lido:objectDescriptionWrap><lido:objectMeasurementsWrap>",
            "<lido:objectMeasurementsSet><lido:displayObjectMeasurements>64 x 80 cm</lido:displayObjectMeasurements>",
            "</lido:objectMeasurementsSet></lido:objectMeasurementsWrap></lido:objectIdentificationWrap>",
            f"<lido:eventWrap>{''.join(events)}</lido:eventWrap>",
            "<lido:objectRelationWrap><lido:subjectWrap><lido:subjectSet><lido:subject>",
            '<lido:subjectConcept><lido:conceptID lido:type="URI">http://vocab.getty.edu/aat/300015638</lido:conceptID>',
            "<lido:term>still lifes</lido:term></lido:subjectConcept>",
            "<lido:subjectConcept><lido:term>lobster</lido:term></lido:subjectConcept>",
            "<lido:subjectPlace><lido:displayPlace>North Sea</lido:displayPlace><lido:place><lido:gml>",
            "<gml:Polygon><gml:exterior><gml:LinearRing><gml:posList>51 2 51 5 55 5 51 2</gml:posList>",
            "</gml:LinearRing></gml:exterior></gml:Polygon></lido:gml></lido:place></lido:subjectPlace>",
            "</lido:subject></lido:subjectSet></lido:subjectWrap></lido:objectRelationWrap>",
            f'</lido:descriptiveMetadata>{further}<lido:administrativeMetadata xml:lang="{lang}">',
            "<lido:rightsWorkWrap><lido:rightsWorkSet><lido:rightsType>",
            '<lido:conceptID lido:type="URI">https://creativecommons.org/publicdomain/mark/1.0/</lido:conceptID>',
            "<lido:term>Public Domain Mark 1.0</lido:term></lido:rightsType>",
            "<lido:rightsHolder><lido:legalBodyName><lido:appellationValue>Example Museum</lido:appellationValue>",
            "</lido:legalBodyName></lido:rightsHolder><lido:creditLine>Example Museum, gift of J. Doe</lido:creditLine>",
            "</lido:rightsWorkSet></lido:rightsWorkWrap><lido:recordWrap>",
            f'<lido:recordID lido:type="local">DE-MUS-1/{number}</lido:recordID>',
            "<lido:recordType><lido:term>item</lido:term></lido:recordType><lido:recordSource>",
            "<lido:legalBodyName><lido:appellationValue>Example Museum</lido:appellationValue></lido:legalBodyName>",
            "</lido:recordSource><lido:recordRights><lido:rightsType><lido:term>CC0 1.0</lido:term>",
            "</lido:rightsType></lido:recordRights><lido:recordInfoSet>",
            f"<lido:recordInfoLink>https://museum.example.org/objects/{number}</lido:recordInfoLink>",
            "</lido:recordInfoSet></lido:recordWrap>",
            f"<lido:resourceWrap>{''.join(resources)}</lido:resourceWrap>",
            "</lido:administrativeMetadata>",
            "</lido:lido></lido:lidoWrap>" if wrapped else "</lido:lido>",
        )
    )


def lido_further_language(lang: str = "de", title: str = "Stillleben mit Hummer") -> str:
    """A second ``descriptiveMetadata`` block: the object's title and description in `lang`."""
    return (
        f'<lido:descriptiveMetadata xml:lang="{lang}"><lido:objectClassificationWrap/>'
        "<lido:objectIdentificationWrap><lido:titleWrap><lido:titleSet>"
        f'<lido:appellationValue lido:pref="preferred">{_x(title)}</lido:appellationValue>'
        "</lido:titleSet></lido:titleWrap><lido:objectDescriptionWrap><lido:objectDescriptionSet>"
        "<lido:descriptiveNoteValue>Ein Hummer, eine Silberkanne und eine Zitrone.</lido:descriptiveNoteValue>"
        "</lido:objectDescriptionSet></lido:objectDescriptionWrap></lido:objectIdentificationWrap>"
        "</lido:descriptiveMetadata>"
    )


def large_lido_document(target_bytes: int, number: str = "large") -> str:
    """A LIDO record of about `target_bytes` (hundreds of events and resources with long
    notes), never more."""
    note = " ".join(_WORDS[i % len(_WORDS)] for i in range(1500))

    def build(count: int) -> str:
        events = [
            _lido_event(
                "Production",
                ("1643", "1645"),
                actors=(("Heda, Willem Claesz.", "person", "painter", ()),),
                place=("Haarlem", "52.38 4.64", ""),
            )
        ]
        events += [
            _lido_event(
                "Exhibition",
                (f"{1900 + i % 120}", f"{1900 + i % 120}"),
                place=(f"Gallery {i % 50}", f"{40 + i % 20}.5 {i % 30}.25", ""),
                extra=_big_note(note),
            )
            for i in range(count)
        ]
        resources = tuple(
            _lido_resource(
                f"https://images.museum.example.org/{number}/{i}.jpg", "image", "CC BY 4.0"
            )
            for i in range(count)
        )
        return lido_document(number, events=tuple(events), resources=resources)

    base, step = len(build(10).encode()), (len(build(20).encode()) - len(build(10).encode())) / 10
    return build(max(1, 10 + int((target_bytes - base) / step)))


def _big_note(note: str) -> str:
    return (
        "<lido:eventDescriptionSet><lido:descriptiveNoteValue>"
        f"{_x(note)}</lido:descriptiveNoteValue></lido:eventDescriptionSet>"
    )


def lido_corpus(start: datetime | None = None) -> Corpus:
    """Synthetic museum objects served under the ``lido`` prefix (and their titles as
    ``oai_dc``): LIDO 1.0 in a lidoWrap, LIDO 1.1 bare, a bilingual one, an undated one and
    one full of values RDM has no place for."""
    corpus = Corpus(sets={"paintings": "Paintings"})
    start = _utc(start or datetime(2024, 1, 1, tzinfo=UTC))
    documents = {
        "lido-1.0": lido_document("1", version="1.0"),
        "lido-1.1": lido_document("2", version="1.1", wrapped=False),
        "bilingual": lido_document("3", further=lido_further_language()),
        "undated": lido_document(
            "4",
            title="Undated sampler",
            work_type="textile",
            events=(
                _lido_event(
                    "Production", display="undated", actors=(("Anonymous", "person", "", ()),)
                ),
            ),
            resources=(),
        ),
        "unmappable": lido_document(
            "5",
            title="Flyer of a guild",
            work_type="Flugblatt",
            events=(
                _lido_event(
                    "Production",
                    display="17th century",
                    actors=(
                        (
                            "Rembrandt van Rijn",
                            "person",
                            "inventor of the design",
                            (
                                "ULAN|http://vocab.getty.edu/ulan/500011051",
                                "VIAF|http://viaf.org/viaf/64013650",
                            ),
                        ),
                        ("Printers' Guild", "corporation", "printer", ()),
                    ),
                    place=("Atlantis", "95 200", "http://vocab.getty.edu/tgn/7000000"),
                    extra="<lido:eventMethod><lido:term>woodcut</lido:term></lido:eventMethod>",
                ),
                _lido_event(
                    "Acquisition", display="1901", actors=(("Doe, Jane", "person", "seller", ()),)
                ),
            ),
            resources=(_lido_resource("images/flyer.jpg"),),
        ),
    }
    for number, (name, xml) in enumerate(documents.items()):
        title = name if name != "unmappable" else "Flyer of a guild"
        corpus.add(
            f"oai:museum.example.org:{name}",
            {"title": [title], "lido": [xml]},
            sets=("paintings",),
            datestamp=start + timedelta(days=number),
        )
    return corpus
