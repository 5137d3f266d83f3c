"""Metadata crosswalks: a parsed OAI-PMH record -> the data dict of a target service.

The engine (``harvest/``) asks the registry for a transformer by name and calls it once per
record; nothing here knows the engine, the database or HTTP. :mod:`.base` says what a
transformer is and how it reports, :mod:`.files` how it names a record's files,
:mod:`.registry` which transformer a name stands for,
:mod:`.dublin_core` is the built-in ``oai_dc`` one, and :mod:`.rdm` holds the crosswalks into
InvenioRDM records (an optional extra, imported only when used).
"""

from .base import (
    Adjuster,
    Transformer,
    TransformError,
    transform_warnings,
    with_transform_warnings,
)
from .dublin_core import DC_NAMESPACE, DublinCoreTransformer
from .files import FileAccess, FileReference, file_reference, transform_files
from .registry import TRANSFORMERS_ENTRY_POINT_GROUP, TransformerChain, TransformerRegistry

__all__ = (
    "DC_NAMESPACE",
    "TRANSFORMERS_ENTRY_POINT_GROUP",
    "Adjuster",
    "DublinCoreTransformer",
    "FileAccess",
    "FileReference",
    "TransformError",
    "Transformer",
    "TransformerChain",
    "TransformerRegistry",
    "file_reference",
    "transform_files",
    "transform_warnings",
    "with_transform_warnings",
)
