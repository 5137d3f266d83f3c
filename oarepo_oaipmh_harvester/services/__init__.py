"""Service API under every surface (CLI, REST, administration, jobs)."""

from .errors import HarvesterAlreadyExists, HarvesterNotFound, HarvesterValidationError
from .harvesters import HarvesterService

__all__ = (
    "HarvesterAlreadyExists",
    "HarvesterNotFound",
    "HarvesterService",
    "HarvesterValidationError",
)
