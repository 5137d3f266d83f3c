"""What a provider asks of a client besides the request: HTTP Basic credentials, headers.

Decision owned here: where credentials go. They are sent with every request to the
provider's own origin (its base URL's scheme, host and port) and with no other: a redirect
to another origin, even an allowed one, gets the request without them. They never appear in
a representation of the object, so that an exception or a log line cannot repeat them.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, repr=False)
class ProviderCredentials:
    """HTTP Basic credentials (both or neither) and request headers for one provider."""

    username: str | None = None
    password: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)

    def request_headers(self) -> dict[str, str]:
        """The headers to add to a request to the provider's own origin."""
        sent = dict(self.headers)
        if self.username is not None:
            pair = f"{self.username}:{self.password or ''}".encode()
            sent["Authorization"] = "Basic " + base64.b64encode(pair).decode("ascii")
        return sent

    def __repr__(self) -> str:
        auth = "set" if self.username is not None else "not set"
        return f"<ProviderCredentials auth {auth}, headers {sorted(self.headers)}>"
