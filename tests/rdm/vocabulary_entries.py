"""A few real InvenioRDM vocabulary entries for the oai_dc -> RDM tests.

Taken by id from invenio-rdm-records' own fixture files, so the entries (and their ``props``:
``eurepo``, ``alpha_2``, ``url``) are the ones a real instance loads; loading all of them
takes minutes (7,847 languages), these take a second.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import yaml

# vocabulary type -> (pid type, fixture file, ids to load)
ENTRIES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "resourcetypes": (
        "rsrct",
        "resource_types.yaml",
        ("publication-article", "publication-journal", "publication-book", "dataset", "image"),
    ),
    "languages": ("lng", "languages.yaml", ("deu", "eng", "ces", "fra")),
    "licenses": ("lic", "licenses.csv", ("cc-by-4.0", "cc0-1.0")),
    "titletypes": ("ttyp", "title_types.yaml", ("alternative-title", "subtitle")),
    "descriptiontypes": ("dty", "description_types.yaml", ("abstract", "other")),
    "contributorsroles": ("cor", "roles.yaml", ("other", "editor")),
    "relationtypes": ("rlt", "relation_types.yaml", ("other", "ispartof")),
    "datetypes": ("dat", "date_types.yaml", ("other", "issued")),
}

# The resource types the conftest already created, with the type itself.
CREATED_BY_CONFTEST = "resourcetypes"


def fixture_dir() -> Path:
    import invenio_rdm_records

    return Path(invenio_rdm_records.__file__).parent / "fixtures" / "data" / "vocabularies"


def _license_row(row: dict[str, str]) -> dict[str, Any]:
    """A licenses.csv row as vocabulary data (``a__b`` columns are nested keys)."""
    entry: dict[str, Any] = {}
    for column, value in row.items():
        if not value:
            continue
        if column == "tags":
            entry["tags"] = value.split(",")
        elif "__" in column:
            outer, inner = column.split("__", 1)
            entry.setdefault(outer, {})[inner] = value
        else:
            entry[column] = value
    return entry


def entries(vocabulary: str) -> list[dict[str, Any]]:
    """The chosen entries of `vocabulary` from the fixture file, with their ``type``."""
    _, filename, ids = ENTRIES[vocabulary]
    path = fixture_dir() / filename
    if filename.endswith(".csv"):
        with path.open(newline="", encoding="utf-8") as stream:
            found = [_license_row(row) for row in csv.DictReader(stream) if row["id"] in ids]
    else:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the languages file is big
        with path.open(encoding="utf-8") as stream:
            found = [entry for entry in yaml.load(stream, Loader=loader) if entry["id"] in ids]
    missing = set(ids) - {entry["id"] for entry in found}
    assert not missing, f"{missing} not in {path}"
    return [{**entry, "type": vocabulary} for entry in found]


def load() -> None:
    """Create the types (but the conftest's) and entries, and make them searchable."""
    from invenio_access.permissions import system_identity
    from invenio_search import current_search
    from invenio_vocabularies.proxies import current_service as vocabularies
    from invenio_vocabularies.records.api import Vocabulary

    for vocabulary, (pid_type, _, _) in ENTRIES.items():
        if vocabulary != CREATED_BY_CONFTEST:
            vocabularies.create_type(system_identity, vocabulary, pid_type)
        for entry in entries(vocabulary):
            vocabularies.create(system_identity, entry)
    # The transformer finds eu-repo types and 2-letter languages by search. (Index.refresh
    # ignores SEARCH_INDEX_PREFIX.)
    current_search.flush_and_refresh(Vocabulary.index._name)
