"""``lido`` -> InvenioRDM record data (the ``lido_rdm`` transformer): museum objects.

Decision owned here: what each part of a LIDO record (1.0 and 1.1; bare or in a
``lidoWrap``) becomes in an RDM record, in the order of the mapping table in docs/lido.rst -
titles, the actors and dates of the events (:mod:`.lido_events`), the resource type through
the type table, subjects, descriptions with materials, techniques and measurements, places,
identifiers, rights and digital resources (:mod:`.lido_rights`, the files :mod:`.lido_files`),
the publisher - and that every value without a home in RDM is a warning on the record, never
a lost record. Only what RDM requires makes a record fail, as with the other RDM
transformers: no title of at least 3 characters; a record whose production event names no
actor gets its holder (else its contributors) as creator with a warning unless
``missing_creator`` says otherwise, and one without a usable production date its
datestamp's year unless the site says ``fail``.

A museum record is mostly one language per ``descriptiveMetadata`` block: the first block is
the record's, a further block (another language) adds its titles, descriptions and subjects
with their language. invenio-rdm-records is an optional extra: nothing RDM-specific is
imported at module level.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..base import TransformError
from .base import RDMTransformer
from .helpers import type_keyword
from .lido_events import actors, dates, event_subjects, events, locations, materials
from .lido_files import files
from .lido_read import (
    CIDOC_MAN_MADE_OBJECT,
    RESOURCE_TYPES,
    language_of,
    lido_attribute,
    lido_record,
    one,
    preferred,
    preferred_text,
    terms,
)
from .lido_rights import identifiers, resources, rights
from .xml import children, line_of, localname, text_of

if TYPE_CHECKING:
    from lxml import etree

    from ...protocol.records import OAIRecord

DEFAULT_RESOURCE_TYPE_KEY = "OAI_HARVESTER_RDM_LIDO_DEFAULT_RESOURCE_TYPE"

# Elements with a rule here, by the element they are in; any other one is dropped with a
# warning (counted once per name). Record-keeping elements (recordType, recordSource,
# recordMetadataDate) say nothing of the object.
MAPPED: dict[str, frozenset[str]] = {
    "lido": frozenset(
        {
            "lidoRecID",
            "objectPublishedID",
            "category",
            "descriptiveMetadata",
            "administrativeMetadata",
        }
    ),
    "descriptiveMetadata": frozenset(
        {"objectClassificationWrap", "objectIdentificationWrap", "eventWrap", "objectRelationWrap"}
    ),
    "objectIdentificationWrap": frozenset(
        {"titleWrap", "repositoryWrap", "objectDescriptionWrap", "objectMeasurementsWrap"}
    ),
    "objectRelationWrap": frozenset({"subjectWrap"}),
    "event": frozenset(
        {"eventID", "eventType", "eventActor", "eventDate", "eventPlace", "eventMaterialsTech"}
        | {"culture", "periodName"}
    ),
    "administrativeMetadata": frozenset({"rightsWorkWrap", "recordWrap", "resourceWrap"}),
    "recordWrap": frozenset(
        {"recordID", "recordType", "recordSource", "recordRights", "recordInfoSet"}
        | {"recordMetadataDate"}
    ),
}
# repositorySet types of the repository that holds the object now (LIDO 1.0 writes
# "current", LIDO 1.1 a terminology URI); any other type (a former repository) is history.
CURRENT_REPOSITORY = re.compile(
    r"current|lido00475|lido01017|repositoryset_type/current_repository", re.I
)
SUBJECT_PARTS = frozenset({"subjectConcept", "subjectActor", "subjectPlace", "subjectDate"})


class LIDORDMTransformer(RDMTransformer):
    """A LIDO record (a museum object) as the data of a metadata-only InvenioRDM record.

    ``resource_types`` adds a site's own ``objectWorkType`` / ``classification`` terms to
    the type table (term -> resource type id, or ids tried in order); the default resource
    type is ``OAI_HARVESTER_RDM_LIDO_DEFAULT_RESOURCE_TYPE`` unless the option says otherwise.
    """

    name = "lido_rdm"

    def __init__(
        self,
        default_resource_type: str | None = None,
        default_contributor_role: str | None = None,
        missing_date: str | None = None,
        resource_types: Mapping[str, str | Sequence[str]] | None = None,
        missing_creator: str | None = None,
    ) -> None:
        from flask import current_app

        super().__init__(
            default_resource_type or current_app.config[DEFAULT_RESOURCE_TYPE_KEY],
            default_contributor_role,
            missing_date,
            missing_creator,
        )
        self.resource_types = {
            **RESOURCE_TYPES,
            **{
                type_keyword(term): (ids,) if isinstance(ids, str) else tuple(ids)
                for term, ids in (resource_types or {}).items()
            },
        }

    def has_scheme(self, scheme: str) -> bool:
        return scheme in (self._identifier_schemes or {})

    def record_data(self, record: OAIRecord) -> dict[str, Any]:
        """The record's data; TransformError for a missing title (or maker or date, when
        ``missing_creator`` or ``missing_date`` is ``fail``)."""
        data, metadata = self.new_record()
        lido = lido_record(record.metadata, record.identifier)
        self._titles(lido, metadata, record)
        holders = self._holders(lido)
        actors(self, lido, metadata, record, holders)
        dates(self, lido, metadata, record)
        metadata["resource_type"] = {"id": self._resource_type(lido)}
        self._subjects(lido, metadata)
        self._descriptions(lido, metadata)
        locations(self, lido, metadata)
        identifiers(self, lido, data, record)
        rights(self, lido, metadata)
        data["access"] = {"record": "public", "files": "public"}
        resources(self, lido, metadata)
        files(self, lido)
        self._publisher(holders, metadata)
        self._unmapped(lido)
        return data

    # -- titles
    def _titles(self, lido: etree._Element, metadata: dict[str, Any], record: OAIRecord) -> None:
        blocks = children(lido, "descriptiveMetadata")
        first = children(blocks[0] if blocks else None, "objectIdentificationWrap", "titleWrap")
        main = preferred(
            [v for s in children(one(first), "titleSet") for v in children(s, "appellationValue")]
        )
        if main is None or len(line_of(main)) < 3:
            found = repr(line_of(main)) if main is not None else "none"
            raise TransformError(
                f"Record {record.identifier} has no title of at least 3 characters "
                f"(RDM needs one); found {found}."
            )
        metadata["title"] = line_of(main)
        main_lang = language_of(main)
        additional = []
        for block in blocks:
            for element in children(
                block, "objectIdentificationWrap", "titleWrap", "titleSet", "appellationValue"
            ):
                text = line_of(element)
                if element is main or not text or text == metadata["title"]:
                    continue
                lang = language_of(element)
                kinds = ("translated-title",) if lang and lang != main_lang else ()
                entry = self._additional(
                    "title", element, text, (*kinds, "alternative-title", "other")
                )
                if entry and entry not in additional:
                    additional.append(entry)
        if additional:
            metadata["additional_titles"] = additional

    def _additional(
        self, field: str, element: etree._Element | None, text: str, kinds: Sequence[str]
    ) -> dict[str, Any] | None:
        """An additional title or description of the first type the vocabulary has, with
        its language; RDM's minimum is 3 characters."""
        label = f"{field} {text[:40]!r}"
        type_id = next((k for k in kinds if self.vocabularies.exists(f"{field}types", k)), None)
        if len(text) < 3 or type_id is None:
            reason = "shorter than 3 characters" if len(text) < 3 else f"no {field} type {kinds[0]}"
            self.warn(f"{label}: {reason}; dropped.")
            return None
        entry: dict[str, Any] = {field: text, "type": {"id": type_id}}
        code = language_of(element) if element is not None else ""
        if code:
            found = self.language(code)
            if found:
                entry["lang"] = {"id": found}
            else:
                self.warn(
                    f"{label}: language {code!r} is not in the languages vocabulary; kept without it."
                )
        return entry

    # -- resource type and subjects
    def _work_types(self, lido: etree._Element) -> list[str]:
        wrap = children(lido, "descriptiveMetadata", "objectClassificationWrap")[:1]
        return terms(one(wrap), "objectWorkTypeWrap", "objectWorkType") + terms(
            one(wrap), "classificationWrap", "classification"
        )

    def _resource_type(self, lido: etree._Element) -> str:
        found = self._work_types(lido)
        for term in found:
            for candidate in self.resource_types.get(type_keyword(term), ()):
                if self.vocabularies.exists("resourcetypes", candidate):
                    return candidate
        category = [text_of(e) for e in children(lido, "category", "conceptID")] + terms(
            lido, "category"
        )
        if any(
            CIDOC_MAN_MADE_OBJECT.search(value) for value in category
        ) and self.vocabularies.exists("resourcetypes", "physicalobject"):
            return "physicalobject"
        default = self.default_resource_type
        shown = ", ".join(map(repr, found)) or "missing"
        self.warn(
            f"objectWorkType {shown}: no matching resource type; using the default {default!r}."
        )
        return default

    def _subjects(self, lido: etree._Element, metadata: dict[str, Any]) -> None:
        subjects: list[dict[str, str]] = []

        def add(entry: dict[str, str]) -> None:
            if entry not in subjects:
                subjects.append(entry)

        for term in self._work_types(lido) + event_subjects(lido):
            add({"subject": term})
        for block in children(lido, "descriptiveMetadata"):
            for subject in children(
                block, "objectRelationWrap", "subjectWrap", "subjectSet", "subject"
            ):
                for concept in children(subject, "subjectConcept"):
                    ids = [text_of(e) for e in children(concept, "conceptID") if text_of(e)]
                    known = next((i for i in ids if self.vocabularies.exists("subjects", i)), None)
                    if known:
                        add({"id": known})
                        continue
                    for term in terms(concept):
                        add({"subject": term})
                    if ids and terms(concept):
                        self.warn(
                            f"subject {terms(concept)[0]!r}: conceptID {ids[0]!r} is not in the "
                            f"subjects vocabulary; kept as text."
                        )
                    elif ids:
                        self.warn(
                            f"subjectConcept {ids[0]!r}: no term and not in the subjects vocabulary; dropped."
                        )
                for element in children(subject, "subjectActor"):
                    name = preferred_text(element, "actor", "nameActorSet", "appellationValue")
                    name = name or text_of(next(iter(children(element, "displayActor")), None))
                    if name:
                        add({"subject": name})
                for element in subject:
                    if isinstance(element.tag, str) and localname(element) not in SUBJECT_PARTS:
                        shown = " ".join(" ".join(element.itertext()).split())[:60]
                        self.warn(
                            f"{localname(element)} {shown!r}: no RDM field is mapped; dropped."
                        )
        if subjects:
            metadata["subjects"] = subjects

    # -- descriptions: the object's, its materials and techniques, its measurements
    def _descriptions(self, lido: etree._Element, metadata: dict[str, Any]) -> None:
        notes = [
            element
            for block in children(lido, "descriptiveMetadata")
            for element in children(
                block,
                "objectIdentificationWrap",
                "objectDescriptionWrap",
                "objectDescriptionSet",
                "descriptiveNoteValue",
            )
            if text_of(element)
        ]
        additional: list[dict[str, Any]] = []
        for element in notes:
            text = text_of(element, as_html=True)
            if "description" not in metadata and len(text) >= 3:
                metadata["description"] = text
                continue
            entry = self._additional("description", element, text, ("other", "abstract"))
            if entry:
                additional.append(entry)
        technical = ("technical-info", "other")
        for found in materials(lido):
            element = found if not isinstance(found, str) else None
            text = text_of(found, as_html=True) if element is not None else found
            entry = self._additional(
                "description", element, f"Materials and techniques: {text}", technical
            )
            if entry and entry not in additional:
                additional.append(entry)
        wrap = children(
            lido, "descriptiveMetadata", "objectIdentificationWrap", "objectMeasurementsWrap"
        )[:1]
        for measurements in children(one(wrap), "objectMeasurementsSet"):
            displays = [
                e for e in children(measurements, "displayObjectMeasurements") if text_of(e)
            ]
            parts = [
                " ".join(
                    filter(
                        None,
                        (
                            preferred_text(m, "measurementType"),
                            text_of(v),
                            preferred_text(m, "measurementUnit"),
                        ),
                    )
                )
                for m in children(measurements, "objectMeasurements", "measurementsSet")
                for v in children(m, "measurementValue")
            ]
            texts = [(e, text_of(e, as_html=True)) for e in displays] or (
                [(None, "; ".join(parts))] if parts else []
            )
            for element, text in texts:
                entry = self._additional("description", element, f"Measurements: {text}", technical)
                if entry and entry not in additional:
                    additional.append(entry)
        if additional:
            metadata["additional_descriptions"] = additional

    # -- the holder
    def _holders(self, lido: etree._Element) -> list[str]:
        """The holding institutions: the current repositories (typed so, or untyped), else
        the record's sources (often an aggregator, so only when no repository is named).
        A former repository holds the object no more: a warning."""
        wrap = children(lido, "descriptiveMetadata", "objectIdentificationWrap", "repositoryWrap")[
            :1
        ]
        current: list[str] = []
        for repository in children(one(wrap), "repositorySet"):
            name = preferred_text(repository, "repositoryName", "legalBodyName", "appellationValue")
            if not name:
                continue
            kind = lido_attribute(repository, "type").lower()
            if not kind or CURRENT_REPOSITORY.search(kind):
                current.append(name)
            else:
                self.warn(f"repositoryName {name!r} ({kind}): a former repository; dropped.")
        sources = [
            preferred_text(s, "legalBodyName", "appellationValue")
            for s in children(lido, "administrativeMetadata", "recordWrap", "recordSource")
        ]
        return list(dict.fromkeys(name for name in current or sources if name))

    def _publisher(self, holders: list[str], metadata: dict[str, Any]) -> None:
        if holders:
            metadata["publisher"] = holders[0]
            for other in holders[1:]:
                self.warn(f"repositoryName {other!r}: RDM keeps one publisher; dropped.")

    # -- what has no rule
    def _unmapped(self, lido: etree._Element) -> None:
        counts: Counter[str] = Counter()
        parents = [("lido", lido)]
        for block in children(lido, "descriptiveMetadata"):
            parents += [("descriptiveMetadata", block)]
            parents += [(localname(e), e) for e in children(block, "objectIdentificationWrap")]
            parents += [(localname(e), e) for e in children(block, "objectRelationWrap")]
        parents += [("event", e) for e in events(lido)]
        for admin in children(lido, "administrativeMetadata"):
            parents += [("administrativeMetadata", admin)]
            parents += [("recordWrap", e) for e in children(admin, "recordWrap")]
        for kind, parent in parents:
            for element in parent:
                if isinstance(element.tag, str) and localname(element) not in MAPPED[kind]:
                    counts[localname(element)] += 1
        for name, count in counts.items():
            times = f" ({count} times)" if count > 1 else ""
            self.warn(f"<{name}>{times}: no RDM field is mapped; dropped.")
        extra = children(lido, "descriptiveMetadata")[1:]
        if any(children(block, "eventWrap") for block in extra):
            self.warn(
                "eventWrap of a further descriptiveMetadata block: the events are read from the first only."
            )
