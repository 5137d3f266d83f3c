"""The OAI-PMH protocol layer (client side): no Flask, no database, only HTTP and XML.

- :mod:`.client` - :class:`OAIClient` and its lazy list streams,
- :mod:`.records` - the immutable values the client returns,
- :mod:`.datestamps` - granularity, formatting and tolerant parsing of datestamps,
- :mod:`.errors` - everything the layer raises (all subclasses of OAIHarvestError),
- :mod:`.transport` and :mod:`.parsing` - HTTP with bounded retries, and safe XML parsing.
"""

from .client import HeaderStream, OAIClient, RecordStream
from .datestamps import Granularity, MalformedDatestamp, format_datestamp, parse_datestamp
from .errors import (
    BadArgument,
    BadResumptionToken,
    BadVerb,
    CannotDisseminateFormat,
    IdDoesNotExist,
    MalformedResponse,
    NoMetadataFormats,
    NoRecordsMatch,
    NoSetHierarchy,
    OAIHarvestError,
    OAIProtocolError,
    OAITransportError,
    TokenLoopError,
    TooManyRestarts,
)
from .records import IdentifyProfile, MetadataFormat, OAIHeader, OAIRecord, OAISet

__all__ = [
    "BadArgument",
    "BadResumptionToken",
    "BadVerb",
    "CannotDisseminateFormat",
    "Granularity",
    "HeaderStream",
    "IdDoesNotExist",
    "IdentifyProfile",
    "MalformedDatestamp",
    "MalformedResponse",
    "MetadataFormat",
    "NoMetadataFormats",
    "NoRecordsMatch",
    "NoSetHierarchy",
    "OAIClient",
    "OAIHarvestError",
    "OAIHeader",
    "OAIProtocolError",
    "OAIRecord",
    "OAISet",
    "OAITransportError",
    "RecordStream",
    "TokenLoopError",
    "TooManyRestarts",
    "format_datestamp",
    "parse_datestamp",
]
