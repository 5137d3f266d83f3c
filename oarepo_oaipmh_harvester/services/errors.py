"""Errors of the harvester service; messages are meant for operators."""

from __future__ import annotations


class HarvesterServiceError(Exception):
    """Base class."""


class HarvesterValidationError(HarvesterServiceError):
    """Input refused; `errors` maps field names to messages."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        self.errors = errors
        details = "; ".join(f"{field}: {' '.join(msgs)}" for field, msgs in errors.items())
        super().__init__(f"Invalid harvester: {details}")


class HarvesterAlreadyExists(HarvesterServiceError):
    """A harvester with this id exists."""

    def __init__(self, harvester_id: str) -> None:
        self.harvester_id = harvester_id
        super().__init__(f"A harvester with id {harvester_id!r} already exists.")


class HarvesterNotFound(HarvesterServiceError):
    """No harvester with this id."""

    def __init__(self, harvester_id: str) -> None:
        self.harvester_id = harvester_id
        super().__init__(f"No harvester with id {harvester_id!r}.")
