"""The JSON shape of a harvester's tracking rows (what it last saw of each OAI identifier)."""

from __future__ import annotations

from datetime import UTC
from typing import Any

from marshmallow import Schema, fields
from marshmallow_utils.fields import TZDateTime


class HarvestedRecordSchema(Schema):
    """What a harvester last saw of one OAI identifier (read only)."""

    id = fields.String(dump_only=True)
    harvester = fields.String(attribute="harvester_id", dump_only=True)
    oai_identifier = fields.String(dump_only=True)
    datestamp = fields.String(dump_only=True)
    deleted = fields.Boolean(dump_only=True)
    local_pid = fields.String(dump_only=True, allow_none=True)
    has_errors = fields.Boolean(dump_only=True)
    has_warnings = fields.Boolean(dump_only=True)
    has_conflicts = fields.Boolean(dump_only=True)
    conflicts = fields.List(fields.Dict(), dump_only=True, allow_none=True)
    conflicts_text = fields.Method("_conflicts_text", dump_only=True)
    state = fields.Method("_state", dump_only=True)
    errors_summary = fields.Method("_errors_summary", dump_only=True)
    errors = fields.List(fields.String(), dump_only=True)
    warnings = fields.List(fields.String(), dump_only=True)
    harvested_at = TZDateTime(timezone=UTC, format="iso", dump_only=True)
    run_id = fields.UUID(dump_only=True, allow_none=True)
    attempts = fields.Integer(dump_only=True)
    next_attempt_at = TZDateTime(timezone=UTC, format="iso", dump_only=True, allow_none=True)
    purged = fields.Boolean(dump_only=True)
    adopted = fields.Boolean(dump_only=True)
    linked = fields.Boolean(dump_only=True)
    files = fields.List(fields.Dict(), dump_only=True, allow_none=True)
    files_summary = fields.Method("_files_summary", dump_only=True)
    files_text = fields.Method("_files_text", dump_only=True)
    original_xml = fields.String(dump_only=True, allow_none=True)
    transformed = fields.Raw(dump_only=True, allow_none=True)

    def _state(self, row: Any) -> str:
        """In words, for lists: what the source says of the record, and a purge's mark."""
        if row.deleted:
            return "deleted at the source"
        return "live, purged locally (the next harvest recreates it)" if row.purged else "live"

    def _files_summary(self, row: Any) -> str:
        """How many files, by status ("2 fetched, 1 failed"); "none" for a metadata-only row."""
        statuses: dict[str, int] = {}
        for state in row.files or ():
            statuses[state.get("status", "?")] = statuses.get(state.get("status", "?"), 0) + 1
        return ", ".join(f"{n} {status}" for status, n in statuses.items()) or "none"

    def _files_text(self, row: Any) -> str:
        """Each file: its name, size, checksum and status, and why where it failed."""
        lines = []
        for state in row.files or ():
            size = f"{state['size']:,} bytes" if state.get("size") is not None else "size unknown"
            line = f"{state.get('key')} ({size}, {state.get('checksum') or 'no checksum'}): "
            line += state.get("status", "?")
            if state.get("error"):
                line += f" - {state['error']}"
            lines.append(line)
        return "\n".join(lines) or "none"

    def _conflicts_text(self, row: Any) -> str:
        """Each field both the source and a local user changed, and which value the field
        policy kept."""
        lines = [
            f"{conflict.get('field')}: changed locally and at the source; "
            f"{conflict.get('policy')} kept the {conflict.get('kept')} value"
            for conflict in row.conflicts or ()
        ]
        return "\n".join(lines) or "none"

    def _errors_summary(self, row: Any) -> str:
        errors = row.errors or []
        if not errors:
            return "none"
        first = errors[0] if len(errors[0]) <= 80 else errors[0][:79] + "…"
        return first if len(errors) == 1 else f"{first} (+{len(errors) - 1} more)"


class HarvestedRecordListSchema(HarvestedRecordSchema):
    """A search hit: without the bulky XML and transformed data (read the record for those)."""

    class Meta:
        exclude = ("original_xml", "transformed", "files", "files_text", "conflicts")
