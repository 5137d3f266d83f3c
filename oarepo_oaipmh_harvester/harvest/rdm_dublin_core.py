"""Moved to :mod:`oarepo_oaipmh_harvester.transformers.rdm.dublin_core`; this alias goes in the
next release."""

from ..transformers.rdm.dublin_core import (
    EUREPO_EMBARGO_END,
    EUREPO_VERSIONS,
    RELATION_TYPES,
    DublinCoreRDMTransformer,
)

__all__ = ("EUREPO_EMBARGO_END", "EUREPO_VERSIONS", "RELATION_TYPES", "DublinCoreRDMTransformer")
