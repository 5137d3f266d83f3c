"""Every version of a harvested work, for what removes it.

Decision owned here: a deletion removes every live version of the record, not only the one the
tracking row names. Changed files make new versions (issue 36), and when the latest version of
an InvenioRDM record is deleted RDM makes the previous one the latest again: a source tombstone
that took only the newest version would leave the earlier one online. The older versions go
first, the latest last, so that no version becomes the latest on the way.
"""

from __future__ import annotations

from typing import Any

from invenio_pidstore.errors import PIDDeletedError, PIDDoesNotExistError, PIDUnregistered
from sqlalchemy.orm.exc import NoResultFound

from .rdm_state import is_deleted

GONE = (
    PIDDoesNotExistError,
    PIDDeletedError,
    PIDUnregistered,
    NoResultFound,
)
"""What resolving a pid raises when the record is not there (any more)."""


def live_versions(service: Any, pid: str) -> list[str]:
    """The pids of the published, not deleted versions of `pid`'s record, oldest first (`pid`
    alone where the record has one version, is not published or the service keeps none)."""
    record_cls = service.record_cls
    if not hasattr(record_cls, "get_records_by_parent"):
        return [pid]
    try:
        record = record_cls.pid.resolve(pid)
    except GONE:
        return [pid]
    if (record.versions.latest_index or 1) <= 1:
        return [pid]
    siblings = [
        version
        for version in record_cls.get_records_by_parent(record.parent, with_deleted=False)
        if not is_deleted(version)
    ]
    if not siblings:
        return [pid]
    siblings.sort(key=lambda version: version.versions.index or 0)
    return [version.pid.pid_value for version in siblings]
