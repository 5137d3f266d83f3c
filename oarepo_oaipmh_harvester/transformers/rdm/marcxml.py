"""``marcxml`` / ``marc21`` -> InvenioRDM record data (the ``marcxml_rdm`` transformer).

Decision owned here: what each field of a MARC 21 bibliographic record (MARCXML slim, bare or
in a ``collection``) becomes in an RDM record, in the order of the mapping table in
docs/marcxml.rst - titles (245, 246, 242, 240/130/210, 880 linked to a title), names
(:mod:`.marcxml_names`), publisher and dates (260/264, 269, 008), the resource type (980, the
leader, 336, then the default), languages (041, 008), descriptions (520, 500, 505, 490),
subjects (6XX, 653, 690), edition, extent, identifiers, rights, host item, links and funding
(:mod:`.marcxml_fields`) - and that every field or subfield without a rule is a warning,
counted once per tag and code, never a silent drop. Only a record without a title of at
least 3 characters fails (and, as the site says, one without creator or date).

The MARC record is read with pymarc (:mod:`.marcxml_read`). invenio-rdm-records is an
optional extra: nothing RDM-specific is imported at module level.
"""

from __future__ import annotations

import re
from html import escape, unescape
from typing import TYPE_CHECKING, Any

from ..base import TransformError
from .base import RDMTransformer
from .helpers import level0_date, years_in_text
from .marcxml_fields import funding, host, identifiers, links, rights
from .marcxml_names import names
from .marcxml_read import (
    COLLECTIONS,
    CONTENT_TYPES,
    LEADER_TYPES,
    first,
    is_linked_title,
    marc_record,
    raw,
    unhandled,
    values,
)

if TYPE_CHECKING:
    import pymarc

    from ...protocol.records import OAIRecord
    from .marcxml_read import MARC

SUBJECT_TAGS = ("600", "610", "611", "630", "648", "650", "651", "655", "653", "690")
# 6XX second indicator -> the thesaurus it names (7: the thesaurus is in $2).
THESAURI = {"0": "lcsh", "1": "lcshac", "2": "mesh", "3": "nal", "5": "cash", "6": "rvm"}
# Additional descriptions: tag -> description types tried in order.
DESCRIPTION_TAGS = {
    "500": ("other",),
    "505": ("table-of-contents", "other"),
    "490": ("series-information", "other"),
}


class MARCXMLRDMTransformer(RDMTransformer):
    """A MARC 21 bibliographic record as the data of a metadata-only InvenioRDM record.

    Besides ``last_warnings``, ``last_files`` lists the files of the record: the 856 links
    that are files (:mod:`.marcxml_files`), which are related identifiers of the record too.
    """

    name = "marcxml_rdm"

    def __init__(
        self,
        default_resource_type: str | None = None,
        default_contributor_role: str | None = None,
        missing_date: str | None = None,
        missing_creator: str | None = None,
    ) -> None:
        super().__init__(
            default_resource_type, default_contributor_role, missing_date, missing_creator
        )
        from flask import current_app

        self._custom_fields = {
            getattr(f, "name", None) for f in current_app.config.get("RDM_CUSTOM_FIELDS") or ()
        }

    def has_scheme(self, scheme: str) -> bool:
        return scheme in (self._identifier_schemes or {})

    def has_custom_field(self, name: str) -> bool:
        return name in self._custom_fields

    def relation(self, *ids: str) -> str | None:
        """The first of the relation types `ids` the vocabulary has."""
        return next((i for i in ids if self.vocabularies.exists("relationtypes", i)), None)

    def relation_by_title(self, title: str) -> str | None:
        """The relation type whose English title (``Is part of``) or DataCite term
        (``IsPartOf``) is `title`."""
        wanted = title.replace(" ", "").lower()
        if self.vocabularies.exists("relationtypes", wanted):
            return wanted
        found = self.vocabularies.by_field(
            "relationtypes", "title.en", title, lambda v: v.replace(" ", "").lower() == wanted
        )
        return found[0] if found else None

    def record_data(self, record: OAIRecord) -> dict[str, Any]:
        """The record's data; TransformError for a missing title (or creator or date, when
        ``missing_creator`` or ``missing_date`` is ``fail``)."""
        data, metadata = self.new_record()
        self._embargo_until = ""
        marc = marc_record(record.metadata, record.identifier)
        data["access"] = {"record": "public", "files": "public"}
        self._titles(marc, metadata, record)
        self._publication(marc, metadata, record)
        names(self, marc, metadata, record)
        metadata["resource_type"] = {"id": self._resource_type(marc)}
        self._languages(marc, metadata)
        self._descriptions(marc, metadata)
        self._subjects(marc, metadata)
        editions = [v for f in marc.get("250") for v in values(f, "a")]
        if editions:
            metadata["version"] = editions[0]
            for other in editions[1:]:
                self.warn(f"250 {other!r}: RDM keeps one version; dropped.")
        sizes = ["; ".join(values(f, "a", "b", "c")) for f in marc.get("300")]
        # InvenioRDM's sizes and formats as it wrote them (no ISBD to cut).
        sizes += [v for f in marc.get("520") if f.indicator2 == "2" for v in raw(f, "a")]
        formats = [v for f in marc.get("520") if f.indicator2 == "1" for v in raw(f, "a")]
        for key, found in (("sizes", sizes), ("formats", formats)):
            if any(found):
                metadata[key] = list(dict.fromkeys(v for v in found if v))
        identifiers(self, marc, data, record)
        rights(self, marc, data)
        if self._embargo_until:
            data["access"]["files"] = "restricted"
            data["access"].update(self.embargo(self._embargo_until, "260 $c embargoEnd"))
        host(self, marc, data)
        links(self, marc, data)
        funding(self, marc, metadata)
        self._thesis(marc, data)
        references = [
            {"reference": v}
            for f in marc.get("999")
            if (f.indicator1, f.indicator2) == ("C", "5")
            for v in raw(f, "x")
        ]
        if references:
            metadata["references"] = references
        for name, count in sorted(unhandled(marc).items()):
            times = f" ({count} times)" if count > 1 else ""
            self.warn(f"{name}{times}: no RDM field is mapped; dropped.")
        return data

    # -- titles
    def _titles(self, marc: MARC, metadata: dict[str, Any], record: OAIRecord) -> None:
        main = next((t for f in marc.get("245") if (t := self._title_of(f))), "")
        if len(main) < 3:
            raise TransformError(
                f"Record {record.identifier} has no title of at least 3 characters in 245 "
                f"(RDM needs one); found {main or 'none'!r}."
            )
        metadata["title"] = main
        additional: list[dict[str, Any]] = []
        extra = [(f, ("alternative-title", "other")) for f in marc.get("245")[1:]]
        for field in marc.get("246"):
            parallel = field.indicator2 == "1"
            kinds = ("translated-title",) if parallel else ()
            extra.append((field, (*kinds, "alternative-title", "other")))
        extra += [(f, ("translated-title", "alternative-title")) for f in marc.get("242")]
        extra += [(f, ("alternative-title", "other")) for f in marc.get("130", "240", "210")]
        extra += [
            (f, ("alternative-title", "other")) for f in marc.get("880") if is_linked_title(f)
        ]
        for field, kinds in extra:
            text = self._title_of(field)
            if not text or text == main:
                continue
            entry = self._additional("title", field.tag, text, kinds)
            if entry:
                lang = first(field, "y") if field.tag == "242" else ""
                found = self.language(lang) if lang else None
                if found:
                    entry["lang"] = {"id": found}
                if entry not in additional:
                    additional.append(entry)
        if additional:
            metadata["additional_titles"] = additional

    @staticmethod
    def _title_of(field: pymarc.Field) -> str:
        """``$a: $b. $n. $p`` (ISBD's " :" before a subtitle read as a colon)."""
        title = ": ".join(values(field, "a", "b")[:2])
        parts = values(field, "n", "p")
        return ". ".join([title, *parts]) if title else ""

    def _additional(
        self, field: str, tag: str, text: str, kinds: tuple[str, ...]
    ) -> dict[str, Any] | None:
        type_id = next((k for k in kinds if self.vocabularies.exists(f"{field}types", k)), None)
        if len(text) < 3 or type_id is None:
            reason = "shorter than 3 characters" if len(text) < 3 else f"no {field} type {kinds[0]}"
            self.warn(f"{tag} {text[:40]!r}: {reason}; dropped.")
            return None
        return {field: text, "type": {"id": type_id}}

    # -- publisher and dates
    def _publication(self, marc: MARC, metadata: dict[str, Any], record: OAIRecord) -> None:
        publishing = [
            f for f in marc.get("260", "264") if f.tag == "260" or f.indicator2 in ("1", " ")
        ]
        publishers = [v for f in publishing for v in values(f, "b")]
        if publishers:
            metadata["publisher"] = publishers[0]
            for other in dict.fromkeys(publishers[1:]):
                if other != publishers[0]:
                    self.warn(f"260/264 $b {other!r}: RDM keeps one publisher; dropped.")
        copyright_dates = [v for f in marc.get("264") if f.indicator2 == "4" for v in raw(f, "c")]
        if copyright_dates:
            metadata["copyright"] = "; ".join(copyright_dates)
        for field in marc.get("264"):
            if field.indicator2 in ("0", "2", "3"):
                self.warn(
                    f"264 {'; '.join(values(field, 'a', 'b', 'c'))!r}: not a publication; dropped."
                )
        dates = [v for f in publishing for v in raw(f, "c")]
        dates += [v for f in marc.get("269") for v in raw(f, "c")]
        unusable: list[str] = []
        for value in dates:
            if value.startswith("info:eu-repo/date/embargoEnd/"):
                until = value.rsplit("/", 1)[-1]
                self._embargo_until = until
                continue
            # "2019, c2020", "1995 [i.e. 1996]": the publication year first, then a
            # copyright or corrected year; the part before the comma is tried first, and a
            # single date before a range of the whole.
            head = re.split(r"[,;\[]", value.lstrip("[ "), maxsplit=1)[0]
            found = level0_date(head.strip("[]. ")) or level0_date(value.strip("[]. "))
            found = found or years_in_text(head) or years_in_text(value)
            if found and "publication_date" not in metadata:
                metadata["publication_date"] = found
            elif not found:
                unusable.append(value)
        fixed = marc.control("008")
        if "publication_date" not in metadata and level0_date(fixed[7:11]):
            metadata["publication_date"] = fixed[7:11]
        if "publication_date" not in metadata:
            metadata["publication_date"] = self.stand_in_publication_date(
                record,
                "260/264 $c, 269 $c or 008/07-10",
                unusable,
                f"Record {record.identifier} has no publication date RDM takes (260/264 $c, "
                f"269 $c, 008/07-10).",
            )
        elif unusable:
            self.warn(
                f"260/264 $c {', '.join(map(repr, unusable))}: not a date RDM takes; dropped."
            )

    # -- resource type
    def _resource_type(self, marc: MARC) -> str:
        exists = self.vocabularies.exists
        terms: list[str] = []
        for field in marc.get("980"):
            kind, sub = first(field, "a"), first(field, "b")
            if kind and sub and exists("resourcetypes", f"{kind}-{sub}".lower()):
                return f"{kind}-{sub}".lower()
            terms.append(kind)
        for term in terms:
            if term.lower() in ("publication", "dataset", "software", "image", "video", "other"):
                if exists("resourcetypes", term.lower()):
                    return term.lower()
        for term in terms:
            found = self.resource_type_by_keyword(term) if term else None
            if found:
                return found
        lowered = {term.lower() for term in terms}
        for collection, candidates in COLLECTIONS.items():
            if collection in lowered:
                for candidate in candidates:
                    if exists("resourcetypes", candidate):
                        return candidate
        leader = marc.leader
        kind, level = leader[6], leader[7]
        for key in ((kind, level), (kind, "")):
            for candidate in LEADER_TYPES.get(key, ()):
                if exists("resourcetypes", candidate):
                    return candidate
        for field in marc.get("336"):
            for code in raw(field, "b"):
                for candidate in CONTENT_TYPES.get(code, ()):
                    if exists("resourcetypes", candidate):
                        return candidate
        default = self.default_resource_type
        shown = ", ".join(repr(t) for t in terms if t) or "none"
        self.warn(
            f"Resource type: leader/06-07 {kind + level!r}, 980 {shown}: no matching resource "
            f"type; using the default {default!r}."
        )
        return default

    # -- languages
    def _languages(self, marc: MARC, metadata: dict[str, Any]) -> None:
        codes: list[str] = []
        for field in marc.get("041"):
            for value in raw(field, "a"):
                # Older records run several codes together ("engfre").
                chunks = [value[i : i + 3] for i in range(0, len(value), 3)]
                codes += chunks if len(value) % 3 == 0 and value.isalpha() else [value]
        fixed = marc.control("008")[35:38].strip(" |")
        if fixed:
            codes.append(fixed)
        found: list[dict[str, str]] = []
        for code in dict.fromkeys(c.strip().lower() for c in codes if c.strip()):
            language = self.language(code)
            if language is None:
                self.warn(f"Language {code!r} is not in the languages vocabulary; dropped.")
            elif {"id": language} not in found:
                found.append({"id": language})
        if found:
            metadata["languages"] = found

    # -- descriptions
    def _descriptions(self, marc: MARC, metadata: dict[str, Any]) -> None:
        additional: list[dict[str, Any]] = []
        seen: set[tuple[str, str]] = set()

        def add(entry: dict[str, Any] | None) -> None:
            if entry and (entry["description"], entry["type"]["id"]) not in seen:
                seen.add((entry["description"], entry["type"]["id"]))
                additional.append(entry)

        for field in marc.get("520"):
            if field.indicator2 in ("1", "2"):
                continue  # InvenioRDM's formats and sizes (read with the other fields)
            for text in raw(field, "a"):
                if "description" not in metadata and len(text) >= 3:
                    metadata["description"] = _html(text)
                else:
                    add(self._additional("description", "520", _html(text), ("abstract",)))
        for tag, kinds in DESCRIPTION_TAGS.items():
            for field in marc.get(tag):
                # A note is sentences (its full stop stays); a series is a heading.
                read = values if tag == "490" else raw
                text = "; ".join(read(field, "a") + read(field, "v"))
                if text:
                    add(self._additional("description", tag, _html(text), kinds))
        if additional:
            metadata["additional_descriptions"] = additional

    def _thesis(self, marc: MARC, data: dict[str, Any]) -> None:
        """502 ``$c`` (and ``$b``, the degree): RDM 13+'s ``thesis:thesis`` custom field
        (university, type), else a site's ``thesis:university`` (the name InvenioRDM's
        MARCXML serializer reads), else a warning."""
        for field in marc.get("502"):
            for university in values(field, "c"):
                if self.has_custom_field("thesis:thesis"):
                    thesis = data.setdefault("custom_fields", {}).setdefault("thesis:thesis", {})
                    thesis.setdefault("university", university)
                    degree = first(field, "b")
                    if degree:
                        thesis.setdefault("type", degree)
                elif self.has_custom_field("thesis:university"):
                    data.setdefault("custom_fields", {}).setdefault("thesis:university", university)
                else:
                    self.warn(
                        f"502 $c {university!r}: the site has no thesis:thesis custom field; "
                        f"dropped."
                    )

    # -- subjects
    def _subjects(self, marc: MARC, metadata: dict[str, Any]) -> None:
        subjects: list[dict[str, str]] = []
        seen: set[tuple[str, str]] = set()
        schemes: dict[str, int] = {}
        for field in marc.get(*SUBJECT_TAGS):
            if field.tag == "650" and (field.indicator1, field.indicator2) == ("1", "7"):
                if self.vocabularies.exists("licenses", first(field, "a").lower()):
                    continue  # InvenioRDM's license id (read with the rights)
            if field.tag in ("653", "690"):  # uncontrolled keywords: one subject each $a
                for keyword in values(field, "a"):
                    if ("subject", keyword) not in seen:
                        seen.add(("subject", keyword))
                        subjects.append({"subject": keyword})
                continue
            parts = values(field, "a", "b", "c", "d", "t") if field.tag == "600" else []
            text = " ".join(parts) if parts else " ".join(values(field, "a", "b"))
            subdivisions = values(field, "x", "y", "z")
            text = " -- ".join([text, *subdivisions]) if text else ""
            if not text:
                continue
            known = next(
                (i for i in raw(field, "0") if self.vocabularies.exists("subjects", i)), None
            )
            entry = {"id": known} if known else {"subject": text}
            key = ("id", known) if known else ("subject", text)
            if key not in seen:
                seen.add(key)
                subjects.append(entry)
            scheme = first(field, "2") or THESAURI.get(field.indicator2, "")
            if scheme and not known and field.tag not in ("653", "690"):
                schemes[scheme] = schemes.get(scheme, 0) + 1
        for scheme, count in schemes.items():
            times = f" ({count} subjects)" if count > 1 else ""
            self.warn(
                f"Subjects of scheme {scheme!r}{times}: kept as free text (RDM's free subjects "
                f"have no scheme)."
            )
        if subjects:
            metadata["subjects"] = subjects


def _html(text: str) -> str:
    """A MARC note as RDM's HTML description: InvenioRDM's serializer writes its HTML
    escaped (``&lt;p&gt;``), which is unescaped back; any other text is escaped."""
    if "&lt;" in text or "&amp;" in text:
        return unescape(text)
    return escape(text, quote=False)
