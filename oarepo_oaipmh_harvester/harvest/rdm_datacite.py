"""Moved to :mod:`oarepo_oaipmh_harvester.transformers.rdm.datacite` (the XML helpers to
``transformers.rdm.xml``, the identifier type helpers to ``transformers.rdm.helpers``, the
coordinates to ``transformers.rdm.datacite_places``); this alias goes in the next release."""

from ..transformers.rdm.datacite import (
    COPYRIGHT_URI,
    DATACITE_KERNEL,
    MAPPED,
    VERSION_MAX_LENGTH,
    DataCiteRDMTransformer,
    datacite_resource,
)
from ..transformers.rdm.datacite_places import coordinate
from ..transformers.rdm.helpers import is_web_url, kebab, scheme_for_type, valid_for
from ..transformers.rdm.xml import (
    XML_LANG,
    attribute,
    children,
    first_text,
    language_attribute,
    localname,
    text_of,
)

__all__ = (
    "COPYRIGHT_URI",
    "DATACITE_KERNEL",
    "MAPPED",
    "VERSION_MAX_LENGTH",
    "XML_LANG",
    "DataCiteRDMTransformer",
    "attribute",
    "children",
    "coordinate",
    "datacite_resource",
    "first_text",
    "is_web_url",
    "kebab",
    "language_attribute",
    "localname",
    "scheme_for_type",
    "text_of",
    "valid_for",
)
