"""Checks a provider before a harvester is saved: does it answer, offer the format, have the sets?"""

from __future__ import annotations

from collections.abc import Sequence

from ..protocol.errors import NoSetHierarchy, OAIHarvestError
from .run import build_client


class PreflightError(Exception):
    """The provider cannot serve the harvester as configured; `field` names what to fix."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(message)


def check_provider(base_url: str, metadata_prefix: str, setspecs: Sequence[str] = ()) -> None:
    """Identify, ListMetadataFormats and ListSets (all pages); raise PreflightError on a problem."""
    with build_client(base_url) as client:
        try:
            client.identify()
        except OAIHarvestError as error:
            raise PreflightError(
                "base_url", f"The provider at {base_url} did not answer Identify: {error}"
            ) from None
        try:
            offered = [fmt.prefix for fmt in client.list_metadata_formats()]
        except OAIHarvestError as error:
            raise PreflightError(
                "metadata_prefix", f"ListMetadataFormats failed at {base_url}: {error}"
            ) from None
        if metadata_prefix not in offered:
            raise PreflightError(
                "metadata_prefix",
                f"The provider does not offer metadata prefix {metadata_prefix!r} "
                f"(it offers: {', '.join(offered) or 'nothing'}).",
            )
        if not setspecs:
            return
        try:
            known = {oai_set.spec for oai_set in client.list_sets()}
        except NoSetHierarchy:
            known = set()
        except OAIHarvestError as error:
            raise PreflightError("setspecs", f"ListSets failed at {base_url}: {error}") from None
        missing = [spec for spec in setspecs if spec not in known]
        if missing:
            examples = ", ".join(sorted(known)[:10]) or "none"
            raise PreflightError(
                "setspecs",
                f"The provider has no set {', '.join(repr(m) for m in missing)} "
                f"({len(known)} sets exist, e.g. {examples}).",
            )
