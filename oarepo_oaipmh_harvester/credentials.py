"""A provider's credentials: HTTP Basic authentication and request headers (an API token).

Decision owned here: how a harvester's credentials are kept and shown. They are stored
encrypted with a key derived from the site's SECRET_KEY (a database dump does not show them);
a fixture may name an environment variable instead of holding a secret (``{"env": NAME}``),
and then only that name is stored. They are never shown back: every surface shows whether
they are set, and the header names. They are read (and environment variables resolved) only
to send a request, by :func:`provider_credentials`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Mapping
from typing import Any

from cryptography.fernet import Fernet, InvalidToken
from flask import current_app

from .protocol.credentials import ProviderCredentials

Secret = str | dict[str, str]
"""A secret as it is stored: the text, or ``{"env": NAME}`` (read from the environment)."""


class CredentialsUnavailable(ValueError):
    """Stored credentials that cannot be used (a changed SECRET_KEY, an unset variable)."""


def _fernet() -> Fernet:
    # A key of its own, derived from SECRET_KEY: Fernet wants 32 url-safe base64 bytes.
    digest = hashlib.sha256(b"oarepo-oaipmh-harvester credentials\0")
    digest.update(str(current_app.config["SECRET_KEY"]).encode())
    return Fernet(base64.urlsafe_b64encode(digest.digest()))


def seal(credentials: Mapping[str, Any] | None) -> str | None:
    """The stored (encrypted) form of ``{"auth": {...}, "headers": {...}}``; None: none."""
    if not credentials:
        return None
    text = json.dumps(dict(credentials), sort_keys=True, separators=(",", ":"))
    return _fernet().encrypt(text.encode()).decode("ascii")


def unseal(sealed: str | None) -> dict[str, Any]:
    """The stored credentials, decrypted ({} when there are none)."""
    if not sealed:
        return {}
    try:
        return json.loads(_fernet().decrypt(sealed.encode("ascii")))
    except (InvalidToken, ValueError) as error:
        raise CredentialsUnavailable(
            "The harvester's stored credentials cannot be decrypted (was SECRET_KEY "
            "changed?); set them again."
        ) from error


def summary(sealed: str | None) -> dict[str, Any]:
    """What every surface shows of the credentials: whether they are set, header names."""
    try:
        stored = unseal(sealed)
    except CredentialsUnavailable:
        return {"auth": "unreadable", "headers": {}}
    return {
        "auth": "set" if stored.get("auth") else "not set",
        "headers": {name: "set" for name in sorted(stored.get("headers") or {})},
    }


def resolve(secret: Secret, what: str) -> str:
    """The text of a secret: itself, or the value of the environment variable it names."""
    if isinstance(secret, dict):
        name = secret.get("env") or ""
        value = os.environ.get(name)
        if value is None:
            raise CredentialsUnavailable(
                f"The {what} is read from the environment variable {name}, which is not set "
                f"in this process."
            )
        return value
    return secret


CHANGES = ("auth", "headers", "clear_credentials")
"""The fields by which a harvester's credentials are written (never read)."""


def updated(sealed: str | None, changes: Mapping[str, Any]) -> str | None:
    """The stored credentials after `changes` (loaded harvester fields): `auth` and
    `headers` replace what they name (None removes it), `clear_credentials` removes both;
    what is not given stays as it was."""
    if not any(name in changes for name in CHANGES):
        return sealed
    stored = {} if changes.get("clear_credentials") else dict(unseal(sealed))
    for name in ("auth", "headers"):
        if name in changes:
            stored[name] = changes[name]
    return seal({name: value for name, value in stored.items() if value})


def provider_credentials(sealed: str | None) -> ProviderCredentials | None:
    """What the client sends with every request to the provider (None: nothing)."""
    return requests_credentials(unseal(sealed))


def requests_credentials(stored: Mapping[str, Any]) -> ProviderCredentials | None:
    """`stored` (decrypted credentials) as the client sends them (None: nothing)."""
    if not stored:
        return None
    auth = stored.get("auth") or {}
    headers = {
        name: resolve(value, f"value of header {name}")
        for name, value in (stored.get("headers") or {}).items()
    }
    return ProviderCredentials(
        username=resolve(auth["username"], "user name") if auth else None,
        password=resolve(auth.get("password") or "", "password") if auth else None,
        headers=headers,
    )
