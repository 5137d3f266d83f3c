"""REST API under ``/api/oai-harvest/``."""

from .config import HarvestedRecordResourceConfig, HarvesterResourceConfig
from .resources import HarvestedRecordResource, HarvesterResource

__all__ = (
    "HarvestedRecordResource",
    "HarvestedRecordResourceConfig",
    "HarvesterResource",
    "HarvesterResourceConfig",
)
