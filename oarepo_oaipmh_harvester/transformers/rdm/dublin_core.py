"""``oai_dc`` -> InvenioRDM record data (the ``oai_dc_rdm`` transformer).

Decision owned here: what each Dublin Core element becomes in an RDM record, and which values
are given up with a warning. Dublin Core is flat and mostly free text while RDM references
vocabularies by id, so every emitted id is looked up first: RDM refuses an unknown id outright
(``InvalidRelationValue``, no draft), which would lose the whole record for one bad value.
Only a missing title makes a record fail, with a :class:`TransformError` naming it: a record
without a creator gets its contributors, else its publisher, as creators with a warning, unless
``missing_creator`` says otherwise (:meth:`.base.RDMTransformer.stand_in_creators`); a record
without a usable date gets its datestamp's year unless the site says ``fail``
(:meth:`.base.RDMTransformer.stand_in_publication_date`).

invenio-rdm-records is an optional extra: nothing RDM-specific is imported at module level.
What the RDM transformers share (vocabulary look-ups, identifier schemes, DOIs, access) is in
:mod:`.base` and :mod:`.helpers`; the rules follow each other in the order of the README's
mapping table.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..base import TransformError
from ..dublin_core import DublinCoreTransformer
from .base import RDMTransformer
from .helpers import (
    add_identifier,
    doi_of,
    eurepo_term,
    level0_date,
    person_or_org,
    pid_doi,
    years_in_text,
)

if TYPE_CHECKING:
    from ...protocol.records import OAIRecord

EUREPO_EMBARGO_END = "info:eu-repo/date/embargoEnd/"

# eu-repo version and other non-type terms that providers put in dc:type: not a resource
# type, so they neither match nor warn.
EUREPO_VERSIONS = frozenset(
    {
        "draft",
        "submittedVersion",
        "acceptedVersion",
        "publishedVersion",
        "updatedVersion",
    }
)

RELATION_TYPES = ("isrelatedto", "other")

# Elements whose values are names or titles: their line breaks are the exporter's layout
# (arXiv wraps its titles), not the value's; descriptions keep theirs.
ONE_LINE_ELEMENTS = (
    "title",
    "creator",
    "contributor",
    "publisher",
    "subject",
)  # relation types tried for dc:relation, in order


# -- the transformer --------------------------------------------------------------------------
class DublinCoreRDMTransformer(RDMTransformer):
    """An ``oai_dc`` record as the data of a metadata-only InvenioRDM record."""

    name = "oai_dc_rdm"

    def record_data(self, record: OAIRecord) -> dict[str, Any]:
        """Raise TransformError when a field RDM requires is missing or unusable."""
        data, metadata = self.new_record()
        warnings = self.last_warnings
        dc = DublinCoreTransformer().transform(record)["metadata"]
        for element in ONE_LINE_ELEMENTS:  # wrapped over lines by the exporter: one value
            if element in dc:
                dc[element] = [" ".join(value.split()) for value in dc[element]]

        self._titles(dc.get("title", []), metadata, record)
        self._creators(dc, metadata, record)
        self._contributors(dc.get("contributor", []), metadata)
        embargo_until = self._dates(dc.get("date", []), metadata, record)
        metadata["resource_type"] = {"id": self._resource_type(dc.get("type", []))}
        self._languages(dc.get("language", []), metadata)
        data["access"] = self._rights(dc.get("rights", []), metadata, embargo_until)
        self._identifiers(dc.get("identifier", []), data, record)
        self._descriptions(dc.get("description", []), metadata)
        self._relations(dc.get("relation", []), metadata)
        if dc.get("subject"):
            metadata["subjects"] = [{"subject": subject} for subject in dc["subject"]]
        publishers = dc.get("publisher", [])
        if publishers:
            metadata["publisher"] = publishers[0]
            for other in publishers[1:]:
                warnings.append(f"dc:publisher {other!r}: RDM keeps one publisher; dropped.")
        for element in ("format", "source", "coverage"):
            for value in dc.get(element, []):
                warnings.append(f"dc:{element} {value!r}: no RDM field is mapped; dropped.")
        return data

    # -- required fields
    def _titles(self, titles: list[str], metadata: dict[str, Any], record: OAIRecord) -> None:
        if not titles:
            raise TransformError(f"Record {record.identifier} has no dc:title (RDM needs one).")
        metadata["title"] = titles[0]
        if len(titles) > 1:
            if self.vocabularies.exists("titletypes", "alternative-title"):
                metadata["additional_titles"] = [
                    {"title": title, "type": {"id": "alternative-title"}} for title in titles[1:]
                ]
            else:
                self.last_warnings.extend(
                    f"dc:title {title!r}: no title type 'alternative-title'; dropped."
                    for title in titles[1:]
                )

    def _creators(
        self, dc: dict[str, list[str]], metadata: dict[str, Any], record: OAIRecord
    ) -> None:
        names = [name for name in dc.get("creator", []) if name.strip()]
        if names:
            metadata["creators"] = [{"person_or_org": person_or_org(name)} for name in names]
            return
        metadata["creators"] = self.stand_in_creators(
            record,
            "dc:creator",
            contributors=[
                {"person_or_org": person_or_org(name)}
                for name in dc.get("contributor", [])
                if name.strip()
            ],
            holders=[name.strip() for name in dc.get("publisher", [])],
            error=f"Record {record.identifier} has no dc:creator (RDM needs at least one).",
        )

    def _contributors(self, names: list[str], metadata: dict[str, Any]) -> None:
        if not names:
            return
        role = self.default_contributor_role
        if not self.vocabularies.exists("contributorsroles", role):
            # RDM requires a role on every contributor: without one they cannot be kept.
            self.last_warnings.extend(
                f"dc:contributor {name!r}: contributor role {role!r} is not in the "
                f"contributorsroles vocabulary; dropped."
                for name in names
            )
            return
        metadata["contributors"] = [
            {"person_or_org": person_or_org(name), "role": {"id": role}} for name in names
        ]

    def _dates(self, values: list[str], metadata: dict[str, Any], record: OAIRecord) -> str | None:
        """Publication date and other dates; returns an eu-repo embargo end, if any."""
        embargo_until = None
        others: list[str] = []
        unusable: list[str] = []
        for value in values:
            if value.startswith(EUREPO_EMBARGO_END):
                embargo_until = level0_date(value[len(EUREPO_EMBARGO_END) :])
                continue
            if value.startswith("info:eu-repo/date/"):
                value = value.rsplit("/", 1)[-1]  # info:eu-repo/date/<kind>/<date>
            parsed = level0_date(value)
            if parsed is None:
                unusable.append(value)
            elif "publication_date" not in metadata:
                metadata["publication_date"] = parsed
            else:
                others.append(parsed)
        if "publication_date" not in metadata:
            for value in unusable:
                years = years_in_text(value)
                if years:
                    metadata["publication_date"] = years
                    self.warn(f"dc:date {value!r}: not an EDTF level 0 date; read as {years}.")
                    unusable.remove(value)
                    break
        self.last_warnings.extend(
            f"dc:date {value!r}: not an EDTF level 0 date; dropped." for value in unusable
        )
        if "publication_date" not in metadata:
            metadata["publication_date"] = self.stand_in_publication_date(
                record,
                "dc:date",
                unusable,
                f"Record {record.identifier} has no dc:date in EDTF form "
                f"(RDM needs a publication date); found {values!r}.",
            )
        if others and self.vocabularies.exists("datetypes", "other"):
            metadata["dates"] = [
                {"date": other, "type": {"id": "other"}, "description": "dc:date"}
                for other in others
            ]
        else:
            self.last_warnings.extend(
                f"dc:date {other!r}: no date type 'other' in the datetypes vocabulary; dropped."
                for other in others
            )
        return embargo_until

    # -- vocabularies
    def _resource_type(self, values: list[str]) -> str:
        unmatched: list[str] = []
        fallback: str | None = None  # info:eu-repo/semantics/other: a last resort only
        for value in values:
            term = eurepo_term(value)
            if term in EUREPO_VERSIONS:
                continue
            if term is not None:
                found = self.resource_type_by_eurepo(value.strip(), term)
                if found and term != "other":
                    return found
                fallback = fallback or found
                if not found:
                    unmatched.append(value)
                continue
            found = self.resource_type_by_keyword(value)
            if found:
                return found
            unmatched.append(value)
        if fallback:
            return fallback
        default = self.default_resource_type
        if unmatched:
            self.last_warnings.append(
                f"dc:type {', '.join(map(repr, unmatched))}: no matching resource type; "
                f"using the default {default!r}."
            )
        else:  # none at all, or only eu-repo version terms
            self.last_warnings.append(
                f"No dc:type names a resource type; using the default {default!r}."
            )
        return default

    def _languages(self, values: list[str], metadata: dict[str, Any]) -> None:
        languages: list[dict[str, str]] = []
        for value in values:
            found = self.language(value)
            if found is None:
                self.last_warnings.append(
                    f"dc:language {value!r}: not in the languages vocabulary; dropped."
                )
            elif {"id": found} not in languages:
                languages.append({"id": found})
        if languages:
            metadata["languages"] = languages

    def _rights(
        self, values: list[str], metadata: dict[str, Any], embargo_until: str | None
    ) -> dict[str, Any]:
        access: dict[str, Any] = {"record": "public", "files": "public"}
        rights: list[dict[str, Any]] = []
        for value in values:
            term = eurepo_term(value)
            if term is not None:
                if not self.file_access(term, access):
                    self.warn(f"dc:rights {value!r}: unknown eu-repo access term.")
                elif term == "embargoedAccess":
                    access.update(
                        self.embargo(
                            embargo_until,
                            "dc:rights embargoedAccess without a future "
                            "info:eu-repo/date/embargoEnd date",
                        )
                    )
                continue
            license_id = (
                self.license_by_url(value) if re.match(r"^https?://", value.strip()) else None
            )
            entry = {"id": license_id} if license_id else {"title": {"en": value}}
            if entry not in rights:
                rights.append(entry)
        rights = self._without_license_titles(rights)
        if rights:
            metadata["rights"] = rights
        return access

    def _without_license_titles(self, rights: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Drop free-text rights that are the title of a license also given by URL: Dublin
        Core writers (RDM's own serializer) send a license as its title and its URL."""
        titles = {
            title.strip().lower()
            for right in rights
            if "id" in right
            for title in (
                (self.vocabularies.entry("licenses", right["id"]) or {}).get("title") or {}
            ).values()
        }
        return [
            right
            for right in rights
            if "id" in right or right["title"]["en"].strip().lower() not in titles
        ]

    # -- identifiers
    def _identifiers(self, values: list[str], data: dict[str, Any], record: OAIRecord) -> None:
        identifiers: list[dict[str, str]] = []
        for value in values:
            doi = doi_of(value)
            if doi and self.doi_as_pid(doi, data):
                continue
            if doi and doi.lower() == pid_doi(data):
                continue  # the same DOI written another way (doi:, https://doi.org/)
            if value.strip() == record.identifier:
                continue  # the OAI identifier is the tracking row's, not the record's
            scheme = "doi" if doi else self.detected_scheme(value)
            if scheme is None:
                self.last_warnings.append(f"dc:identifier {value!r}: scheme unknown; dropped.")
                continue
            # DOIs are case-insensitive: one written twice is kept once.
            add_identifier(identifiers, {"identifier": doi or value.strip(), "scheme": scheme})
        if identifiers:
            data["metadata"]["identifiers"] = identifiers

    def _relations(self, values: list[str], metadata: dict[str, Any]) -> None:
        if not values:
            return
        # dc:relation says only "related"; RDM's relation types (DataCite 4.5) have no
        # IsRelatedTo, but an instance may add it, and DataCite's "Other" is the honest rest.
        relation = next(
            (r for r in RELATION_TYPES if self.vocabularies.exists("relationtypes", r)), None
        )
        if relation is None:
            self.last_warnings.extend(
                f"dc:relation {value!r}: no relation type {' or '.join(RELATION_TYPES)}; dropped."
                for value in values
            )
            return
        related: list[dict[str, Any]] = []
        for value in values:
            doi = doi_of(value)
            scheme = "doi" if doi else self.detected_scheme(value, related=True)
            if scheme is None:
                self.last_warnings.append(f"dc:relation {value!r}: scheme unknown; dropped.")
                continue
            related.append(
                {
                    "identifier": doi or value.strip(),
                    "scheme": scheme,
                    "relation_type": {"id": relation},
                }
            )
        if related:
            metadata["related_identifiers"] = related

    def _descriptions(self, values: list[str], metadata: dict[str, Any]) -> None:
        if not values:
            return
        metadata["description"] = values[0]
        rest = values[1:]
        if not rest:
            return
        kind = next(
            (k for k in ("other", "abstract") if self.vocabularies.exists("descriptiontypes", k)),
            None,
        )
        if kind is None:
            self.last_warnings.extend(
                f"dc:description {value[:40]!r}...: no description type; dropped." for value in rest
            )
            return
        metadata["additional_descriptions"] = [
            {"description": value, "type": {"id": kind}} for value in rest
        ]
