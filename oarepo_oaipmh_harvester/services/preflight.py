"""Checks a provider before a harvester is saved: does it answer, offer the format, have the sets?

Decision owned here: which provider answers refuse a harvester's configuration, and in which
words.

An operator waits for this answer in a form: it asks with short timeouts and no long retries,
bounds the whole check's time (``OAI_HARVESTER_PREFLIGHT_TIMEOUT``: a provider that accepts the
connection and never answers would otherwise hold the form for half a minute), reports every
problem it finds at once (each on its field), and says what went wrong in a plain sentence
rather than in the HTTP library's words.
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Callable, Sequence

from ..harvest.assembly import build_client
from ..protocol import deadline
from ..protocol.client import OAIClient
from ..protocol.credentials import ProviderCredentials
from ..protocol.errors import ForbiddenAddress, NoSetHierarchy, OAIHarvestError, limited


class PreflightError(Exception):
    """The provider cannot serve the harvester as configured; `errors` maps fields to problems."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        self.errors = errors
        field, messages = next(iter(errors.items()))
        self.field = field
        self.message = messages[0]
        super().__init__("; ".join(message for messages in errors.values() for message in messages))


def plain_reason(error: BaseException) -> str:
    """Why a request failed, in a few words: "connection refused", "name not known", ..."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ForbiddenAddress):
            return (
                f"its address {current.address} is in {current.network}, a network this site "
                f"does not harvest from (OAI_HARVESTER_FORBIDDEN_NETWORKS; local and private "
                f"networks need OAI_HARVESTER_ALLOW_PRIVATE_NETWORKS)"
            )
        if isinstance(current, ConnectionRefusedError) or getattr(current, "errno", None) == (
            errno.ECONNREFUSED
        ):
            return "connection refused"
        if isinstance(current, socket.gaierror):
            return "its host name is not known"
        if isinstance(current, TimeoutError | socket.timeout) or "timed out" in str(current):
            return "no answer in time"
        if "NameResolutionError" in type(current).__name__ or "Name or service not known" in str(
            current
        ):
            return "its host name is not known"
        if "Connection refused" in str(current):
            return "connection refused"
        current = current.__cause__ or current.__context__ or _wrapped_reason(current)
    return str(error)


def _wrapped_reason(error: BaseException) -> BaseException | None:
    # urllib3's MaxRetryError keeps the last failure in `reason`, not as a cause.
    reason = getattr(error, "reason", None)
    return reason if isinstance(reason, BaseException) else None


def check_provider(
    base_url: str,
    metadata_prefix: str | None,
    setspecs: Sequence[str] = (),
    *,
    timeout: tuple[float, float] = (3.0, 15.0),
    max_retries: int = 1,
    credentials: ProviderCredentials | None = None,
    time_limit: float | None = None,
) -> list[str]:
    """Identify, ListMetadataFormats and ListSets (all pages); raise PreflightError on problems.
    Returns the prefixes the provider offers (a `metadata_prefix` of None is not checked: the
    caller picks one of them).

    `credentials` go with the requests as they would with a run's; `time_limit` bounds the
    whole check, retries included (None: each request's own timeouts only)."""
    with deadline.spending(time_limit) as budget:
        return _check(
            base_url, metadata_prefix, setspecs, timeout, max_retries, credentials, budget
        )


def _check(
    base_url: str,
    metadata_prefix: str | None,
    setspecs: Sequence[str],
    timeout: tuple[float, float],
    max_retries: int,
    credentials: ProviderCredentials | None,
    budget: deadline.Budget | None,
) -> list[str]:
    def reason(error: BaseException) -> str:
        if budget is not None and budget.spent:
            return (
                f"no answer within the {budget.seconds:g} s the whole check may take "
                f"(OAI_HARVESTER_PREFLIGHT_TIMEOUT)"
            )
        return plain_reason(error)

    errors: dict[str, list[str]] = {}
    offered: list[str] = []
    with build_client(
        base_url,
        credentials=credentials,
        timeout=timeout,
        max_retries=max_retries,
        max_retry_wait=timeout[1],
    ) as client:
        try:
            client.identify()
        except OAIHarvestError as error:
            raise PreflightError(
                {
                    "base_url": [
                        f"The provider at {limited(base_url)} did not answer Identify: "
                        f"{reason(error)}."
                    ]
                }
            ) from None
        try:
            offered = [fmt.prefix for fmt in client.list_metadata_formats()]
        except OAIHarvestError as error:
            errors["metadata_prefix"] = [
                f"ListMetadataFormats failed at {limited(base_url)}: {reason(error)}."
            ]
        else:
            if metadata_prefix is not None and metadata_prefix not in offered:
                errors["metadata_prefix"] = [
                    f"The provider does not offer metadata prefix {limited(metadata_prefix)!r} "
                    f"(it offers: {limited(', '.join(offered)) or 'nothing'})."
                ]
        if setspecs:
            _check_sets(client, base_url, setspecs, errors, reason)
    if errors:
        raise PreflightError(errors)
    return offered


def _check_sets(
    client: OAIClient,
    base_url: str,
    setspecs: Sequence[str],
    errors: dict[str, list[str]],
    reason: Callable[[BaseException], str],
) -> None:
    try:
        known = {oai_set.spec for oai_set in client.list_sets()}
    except NoSetHierarchy:
        known = set()
    except OAIHarvestError as error:
        errors["setspecs"] = [f"ListSets failed at {limited(base_url)}: {reason(error)}."]
        return
    missing = [spec for spec in setspecs if spec not in known]
    if missing:
        examples = limited(", ".join(sorted(known)[:10])) or "none"
        errors["setspecs"] = [
            f"The provider has no set {limited(', '.join(repr(m) for m in missing))} "
            f"({len(known)} sets exist, e.g. {examples})."
        ]
