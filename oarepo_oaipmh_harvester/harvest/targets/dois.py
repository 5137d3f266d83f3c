"""Who holds a harvested DOI, and when a record may take it.

Decision owned here: a DOI is held by the record the PID store names (the search index may not
have it yet), compared without regard to case; a record other than the one written that holds
it is a conflict, unless it is an earlier version of that same record (a new version made for
changed files), which keeps it.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from invenio_pidstore.models import PersistentIdentifier


class DoiConflict(Exception):
    """The harvested DOI belongs to another local record, which is left as it is."""


def doi_holders(doi: str) -> sa.Select:
    """The PIDs whose value is `doi`, case aside, oldest first (the models' DOI_HOLDER_INDEX
    answers it without reading every DOI of the site)."""
    pid = PersistentIdentifier
    return (
        sa.select(pid)
        .where(pid.pid_type == "doi", sa.func.lower(pid.pid_value) == doi.lower())
        .order_by(pid.created)
    )


def doi_holder(service: Any, doi: str, *, gone: tuple[type[Exception], ...]) -> str | None:
    """The pid of the local record (or draft) of `service` that holds `doi`, if any.

    Read from the PID store, which decides who may register a DOI; the search index may not
    have the holder yet. DOIs compare without regard to case.
    """
    from invenio_db import db

    found = db.session.scalars(doi_holders(doi).limit(1)).first()
    if found is None or found.object_uuid is None:
        return None
    for record_cls in (service.record_cls, service.draft_cls):
        try:
            return record_cls.get_record(found.object_uuid, with_deleted=True).pid.pid_value
        except gone:
            continue
    return None


def _refuse_doi_held(doi: str | None, holder: str | None, *, pid: str | None) -> None:
    """DoiConflict when `holder`, a record other than `pid`, holds `doi`."""
    if holder is None or holder == pid:
        return
    hint = (
        " Set the harvester's doi_conflicts to take-over to let it update that record."
        if pid is None
        else ""
    )
    raise DoiConflict(
        f"DOI {doi} is already held by local record {holder}; the harvested record was "
        f"not written and {holder} was left as it is.{hint}"
    )


def _doi_of(data: dict[str, Any]) -> str | None:
    """The DOI that the data gives the record as its pid, if any."""
    doi = ((data.get("pids") or {}).get("doi") or {}).get("identifier")
    return (str(doi).strip() or None) if doi else None


def without_doi(data: dict[str, Any]) -> dict[str, Any]:
    """`data` without the DOI it gives the record (its other pids kept)."""
    pids = {scheme: pid for scheme, pid in (data.get("pids") or {}).items() if scheme != "doi"}
    return {**data, "pids": pids}


def versions_of_one_record(service: Any, pid: str, other: str) -> bool:
    """Whether the published records `pid` and `other` are versions of one record."""
    from invenio_pidstore.errors import PIDDeletedError, PIDDoesNotExistError

    try:
        parents = {str(service.record_cls.pid.resolve(value).parent.id) for value in (pid, other)}
    except (PIDDoesNotExistError, PIDDeletedError):
        return False
    return len(parents) == 1
