"""Moved to :mod:`oarepo_oaipmh_harvester.transformers` (``base``, ``registry``,
``dublin_core``); this alias goes in the next release."""

from ..transformers.base import (
    Adjuster,
    Transformer,
    TransformError,
    transform_warnings,
    with_transform_warnings,
)
from ..transformers.dublin_core import DC_NAMESPACE, DublinCoreTransformer
from ..transformers.registry import (
    TRANSFORMERS_ENTRY_POINT_GROUP,
    TransformerChain,
    TransformerRegistry,
)

__all__ = (
    "DC_NAMESPACE",
    "TRANSFORMERS_ENTRY_POINT_GROUP",
    "Adjuster",
    "DublinCoreTransformer",
    "TransformError",
    "Transformer",
    "TransformerChain",
    "TransformerRegistry",
    "transform_warnings",
    "with_transform_warnings",
)
