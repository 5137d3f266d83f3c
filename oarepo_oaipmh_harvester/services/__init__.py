"""Service API under every surface (CLI, REST, administration, jobs, fixtures)."""

from .config import HarvestedRecordServiceConfig, HarvesterServiceConfig, HarvestRunServiceConfig
from .errors import (
    HarvestedRecordNotFound,
    HarvesterAlreadyExists,
    HarvesterNotFound,
    HarvesterServiceError,
    HarvesterValidationError,
    HarvestRunInProgress,
    HarvestRunNotFound,
)
from .harvesters import HarvesterService
from .records import HarvestedRecordService
from .runs import HarvestRunService

__all__ = (
    "HarvestRunInProgress",
    "HarvestRunNotFound",
    "HarvestRunService",
    "HarvestRunServiceConfig",
    "HarvestedRecordNotFound",
    "HarvestedRecordService",
    "HarvestedRecordServiceConfig",
    "HarvesterAlreadyExists",
    "HarvesterNotFound",
    "HarvesterService",
    "HarvesterServiceConfig",
    "HarvesterServiceError",
    "HarvesterValidationError",
)
