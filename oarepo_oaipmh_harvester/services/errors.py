"""Errors of the harvester services; messages are meant for operators.

The REST resources map them to HTTP statuses (see `resources/config.py`): validation 400,
not found 404, duplicate id, run in progress and deleting a running harvester 409.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from marshmallow import ValidationError

from ..text import echoed, with_field_names


class HarvesterServiceError(Exception):
    """Base class."""


class HarvesterValidationError(HarvesterServiceError, ValidationError):
    """Input refused; `errors` maps field names to messages.

    A marshmallow `ValidationError` too, so that every Invenio REST error handler renders it
    as a 400 with `{"field": ..., "messages": [...]}` entries, which the admin forms show
    next to their fields.
    """

    def __init__(self, errors: dict[str, list[str]]) -> None:
        self.referring_errors = errors
        """As given: other fields named in messages by `text.field_reference`."""
        self.errors = {
            field: [with_field_names(str(message)) for message in _listed(messages)]
            for field, messages in errors.items()
        }
        """As REST shows them: other fields named by their field names."""
        ValidationError.__init__(self, self.errors)

    def __str__(self) -> str:
        return self.describe()

    def describe(
        self, what: str = "Invalid harvester", field_name: Callable[[str], str] = str
    ) -> str:
        """`what: field: message`, or `what:` and one `field: message` a line when there are
        several, as the REST API lists them; the fields named by `field_name` (the command
        line names them as its options). A refusal of the whole input names no field."""
        problems = [
            with_field_names(str(message), field_name)
            if field == "_schema"
            else f"{field_name(field)}: {with_field_names(str(message), field_name)}"
            for field, messages in self.referring_errors.items()
            for message in _listed(messages)
        ]
        if len(problems) == 1:
            return f"{what}: {problems[0]}"
        return "\n".join([f"{what}:", *(f"  {problem}" for problem in problems)])


def _listed(messages: Any) -> list[Any]:
    return list(messages) if isinstance(messages, list | tuple) else [messages]


def kind_of_value(value: Any) -> str:
    """What a JSON value is, in words: "a list", "a string", "null"..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "a list"
    return f"a {type(value).__name__}"


def required_mapping(data: Any, what: str) -> Mapping[str, Any]:
    """`data` when it is a mapping of fields, else HarvesterValidationError saying what to send.

    A REST body is whatever JSON the client sent: a list or a string reaching the schemas
    would fail far from the cause (a 500), and an empty list or a zero taken as "nothing"
    would start a run nobody asked for. `what` completes "Send ...": what goes in the object.
    """
    if isinstance(data, Mapping):
        return data
    raise HarvesterValidationError(
        {"_schema": [f"Send {what} as a JSON object, not {kind_of_value(data)}."]}
    )


class HarvesterAlreadyExists(HarvesterServiceError):
    """A harvester with this id exists."""

    def __init__(self, harvester_id: str) -> None:
        self.harvester_id = harvester_id
        super().__init__(f"A harvester with id {echoed(harvester_id)} already exists.")


class HarvesterNotFound(HarvesterServiceError):
    """No harvester with this id (or none the caller may see)."""

    def __init__(self, harvester_id: str) -> None:
        self.harvester_id = harvester_id
        super().__init__(f"No harvester with id {echoed(harvester_id)}.")


class HarvestedRecordNotFound(HarvesterServiceError):
    """The harvester does not track this OAI identifier (or the caller may not see it)."""

    def __init__(self, harvester_id: str, oai_identifier: str) -> None:
        self.harvester_id = harvester_id
        self.oai_identifier = oai_identifier
        super().__init__(
            f"Harvester {echoed(harvester_id)} has no record with OAI identifier "
            f"{echoed(oai_identifier)}."
        )


class HarvestRunNotFound(HarvesterServiceError):
    """No run with this id belongs to the harvester."""

    def __init__(self, harvester_id: str, run_id: str) -> None:
        self.harvester_id = harvester_id
        self.run_id = run_id
        super().__init__(f"Harvester {echoed(harvester_id)} has no run {echoed(run_id)}.")


class HarvesterInUse(HarvesterServiceError):
    """A run holds the harvester's lock: deleting it now would pull its rows from under the run.

    `run_id` and `status` name the invenio-jobs run that holds it, when there is one;
    `holder` names who holds the lock (a database session, or a process on SQLite).
    """

    def __init__(
        self,
        harvester_id: str,
        run_id: str | None,
        status: str | None,
        holder: str | None,
    ) -> None:
        self.harvester_id = harvester_id
        self.run_id = run_id
        self.status = status
        self.holder = holder
        if run_id is not None:
            running = f"run {run_id} ({status}) is harvesting it"
        else:
            named = f" ({holder})" if holder else ""
            running = f"a run outside invenio-jobs{named} is harvesting it"
        super().__init__(
            f"Harvester {echoed(harvester_id)} cannot be deleted while {running}; nothing was "
            f"deleted. Wait for the run to end (or stop it in Administration -> Jobs) and "
            f"delete again."
        )


class HarvestRunInProgress(HarvesterServiceError):
    """A run of the harvester is queued or running; a second one would only compete with it."""

    def __init__(self, harvester_id: str, run_id: str, status: str) -> None:
        self.harvester_id = harvester_id
        self.run_id = run_id
        self.status = status
        super().__init__(
            f"Harvester {harvester_id!r} already has a run in progress "
            f"(run {run_id}, {status}); wait for it to finish or stop it in the Jobs panel."
        )
