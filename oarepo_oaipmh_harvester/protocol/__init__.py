"""The OAI-PMH protocol layer (client side): no Flask, no database, only HTTP and XML.

- :mod:`.client` - :class:`OAIClient`, one method per verb,
- :mod:`.options` - :class:`ProtocolOptions`, every tuning knob and its default,
- :mod:`.streams` - the lazy list streams (resumption tokens, restarts, loops),
- :mod:`.items` and :mod:`.records` - building the immutable values the client returns,
- :mod:`.response` - one parsed response and its OAI-PMH errors,
- :mod:`.datestamps` - granularity, formatting and tolerant parsing of datestamps,
- :mod:`.errors` - everything the layer raises (all subclasses of OAIHarvestError),
- :mod:`.transport` and :mod:`.parsing` - HTTP with bounded retries, and safe XML parsing.
"""

from .client import OAIClient
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
from .options import ProtocolOptions
from .records import IdentifyProfile, MetadataFormat, OAIHeader, OAIRecord, OAISet
from .streams import HeaderStream, RecordStream

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
    "ProtocolOptions",
    "RecordStream",
    "TokenLoopError",
    "TooManyRestarts",
    "format_datestamp",
    "parse_datestamp",
]
