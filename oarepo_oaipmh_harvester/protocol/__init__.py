"""The OAI-PMH protocol layer (client side): no Flask, no database, only HTTP and XML.

- :mod:`.client` - :class:`OAIClient`, one method per verb,
- :mod:`.options` - :class:`ProtocolOptions`, every tuning knob and its default,
- :mod:`.streams` - the lazy list streams (resumption tokens, restarts, loops),
- :mod:`.items` and :mod:`.records` - building the immutable values the client returns,
- :mod:`.response` - one parsed response and its OAI-PMH errors,
- :mod:`.datestamps` - granularity, formatting and tolerant parsing of datestamps,
- :mod:`.errors` - everything the layer raises (all subclasses of OAIHarvestError),
- :mod:`.transport` and :mod:`.parsing` - HTTP with bounded retries, and safe XML parsing,
- :mod:`.retry`, :mod:`.networks`, :mod:`.adapter`, :mod:`.deadline` - retry waits, forbidden
  addresses, checked connections, and the total time of one exchange,
- :mod:`.progress` - when a list that keeps sending tokens is given up,
- :mod:`.downloads` (with :mod:`.download_body`, :mod:`.download_errors`) - a record's files,
  fetched from allowed hosts only, verified and bounded.
"""

from .client import OAIClient
from .datestamps import Granularity, MalformedDatestamp, format_datestamp, parse_datestamp
from .errors import (
    BadArgument,
    BadResumptionToken,
    BadVerb,
    CannotDisseminateFormat,
    ForbiddenAddress,
    IdDoesNotExist,
    MalformedResponse,
    NoMetadataFormats,
    NoProgress,
    NoRecordsMatch,
    NoSetHierarchy,
    OAIHarvestError,
    OAIProtocolError,
    OAITransportError,
    RedirectNotAllowed,
    RequestDeadlineExceeded,
    TokenLoopError,
    TooManyPages,
    TooManyRestarts,
)
from .networks import DEFAULT_FORBIDDEN_NETWORKS, LOOPBACK_AND_PRIVATE_NETWORKS, check_url_allowed
from .options import ProtocolOptions
from .records import IdentifyProfile, MetadataFormat, OAIHeader, OAIRecord, OAISet
from .streams import HeaderStream, RecordStream

__all__ = [
    "DEFAULT_FORBIDDEN_NETWORKS",
    "LOOPBACK_AND_PRIVATE_NETWORKS",
    "BadArgument",
    "BadResumptionToken",
    "BadVerb",
    "CannotDisseminateFormat",
    "ForbiddenAddress",
    "Granularity",
    "HeaderStream",
    "IdDoesNotExist",
    "IdentifyProfile",
    "MalformedDatestamp",
    "MalformedResponse",
    "MetadataFormat",
    "NoMetadataFormats",
    "NoProgress",
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
    "RedirectNotAllowed",
    "RequestDeadlineExceeded",
    "TokenLoopError",
    "TooManyPages",
    "TooManyRestarts",
    "check_url_allowed",
    "format_datestamp",
    "parse_datestamp",
]
