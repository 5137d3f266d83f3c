"""The harvester form's fields for what guards a collection: which local records a new record
may be matched to (match_on), what a harvest does to local edits (field_policy) and how much one
run may delete (deletion_guard); their labels and widgets as invenio-administration's form
renderer gets them."""

from __future__ import annotations

from typing import Any

from invenio_i18n import lazy_gettext as _

from ..harvest.targets.options import MATCH_SCHEMES

GUARD_FIELDS: dict[str, dict[str, Any]] = {
    "match_on": {
        "order": 9.78,
        "text": _("Match new records by"),
        "type": "dropdown",
        "multiple": True,
        "options": [{"id": scheme, "title_l10n": scheme} for scheme in MATCH_SCHEMES],
        "description": _(
            "Identifier schemes, in order, by which a new record is matched to a local record "
            "no harvester tracks: taken over where DOI conflicts says take-over, else it fails "
            "naming it. Empty: OAI_HARVESTER_MATCH_ON."
        ),
    },
    "field_policy": {
        "order": 9.79,
        "text": _("Field policies for local edits"),
        "rows": 3,
        "description": _(
            "What a harvest does to a field a local user changed, one <code>path = policy"
            "</code> per line: <code>source</code> overwrites (the default), <code>local</code> "
            "keeps the local value, <code>merge</code> unites lists (e.g. "
            "<code>metadata.subjects = merge</code>; <code>custom_fields.*</code>: each)."
        ),
    },
    "dedupe": {
        "order": 9.785,
        "text": _("A work another harvester brought"),
        "description": _(
            "InvenioRDM: a new record with the DOI or a match-by identifier of a record another "
            "harvester holds. off: two records; link: one record, this source linked to it "
            "(its metadata not written); merge: as link, and its fields whose field policy is "
            "merge united with the record's. A record either source still brings is never "
            "deleted for the other's deletion or purge."
        ),
    },
    "deletion_guard": {
        "order": 9.77,
        "text": _("Deletion guard (percent)"),
        # A float has no widget in the form renderer; the API reads decimal text.
        "type": "string",
        "description": _(
            "A run that would delete more than this share of the live records (and at least "
            "OAI_HARVESTER_DELETION_GUARD_MINIMUM) holds its deletions for you to confirm or "
            "reject; 0 turns the guard off. Empty: OAI_HARVESTER_DELETION_GUARD."
        ),
    },
}
