"""The metadata prefix of a harvester created without one: the richest the provider offers.

Decision owned here: which of the formats a provider advertises (ListMetadataFormats) a
harvester gets when the operator names none - the first of ``OAI_HARVESTER_PREFERRED_PREFIXES``
for the kind of its target that the provider offers and a transformer reads into that target -
and the sentence that says why, stored with the harvester and shown on every surface.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from flask import current_app

from ..protocol.errors import limited
from ..proxies import current_oai_harvester
from ..text import echoed
from .transformer_fit import target_is_rdm


@dataclass(frozen=True)
class PrefixChoice:
    prefix: str
    transformer: str
    reason: str


class NoUsablePrefix(Exception):
    """The provider offers no format a transformer reads into the target."""


def _candidates(target: str | None, transformer: str | None) -> tuple[str, list[tuple[str, str]]]:
    """The target's kind and its (prefix, transformer) pairs in order of preference."""
    config = current_app.config
    kind = "inveniordm" if target_is_rdm(target) else "other"
    preferred = list(config["OAI_HARVESTER_PREFERRED_PREFIXES"].get(kind) or [])
    registered = current_oai_harvester.transformers
    pairs: list[tuple[str, str]] = []
    for prefix in preferred:
        if kind == "inveniordm":
            natural = config["OAI_HARVESTER_RDM_TRANSFORMERS"].get(prefix)
        else:
            natural = config["OAI_HARVESTER_DEFAULT_TRANSFORMER"]
        if natural is None or natural not in registered:
            continue
        if transformer is not None and kind == "inveniordm" and natural != transformer:
            continue  # a named transformer reads only its own formats
        pairs.append((prefix, transformer or natural))
    return kind, pairs


def choose_prefix(
    offered: Sequence[str], target: str | None, transformer: str | None = None
) -> PrefixChoice:
    """The richest of `offered` for `target` (and `transformer`, when one is named)."""
    kind, pairs = _candidates(target, transformer)
    offered_text = limited(", ".join(offered)) or "nothing"
    preference = ", ".join(prefix for prefix, _ in pairs)
    for prefix, chosen_transformer in pairs:
        if prefix in offered:
            return PrefixChoice(
                prefix=prefix,
                transformer=chosen_transformer,
                reason=(
                    f"{prefix} was picked: of the formats the provider offers ({offered_text}), "
                    f"the first in this site's order for {echoed(target)} ({preference}; "
                    f"OAI_HARVESTER_PREFERRED_PREFIXES[{kind!r}]), read by {chosen_transformer}."
                ),
            )
    named = f" with transformer {echoed(transformer)}" if transformer else ""
    raise NoUsablePrefix(
        f"The provider offers no format this site can harvest into {echoed(target)}{named}: "
        f"it offers {offered_text}; this site reads {preference or 'none'} "
        f"(OAI_HARVESTER_PREFERRED_PREFIXES). Name a metadata prefix and a transformer that "
        f"reads it."
    )


def picked_prefix(loaded: dict, offered: Sequence[str] | None) -> dict[str, list[str]]:
    """Give `loaded` (a harvester without a prefix) the richest prefix of `offered`, its
    transformer unless one is named, and the reason; or the errors that say why not."""
    if offered is None:
        return {
            "metadata_prefix": [
                "Name a metadata prefix, or let the provider check run: it picks the richest "
                "format the provider offers."
            ]
        }
    try:
        choice = choose_prefix(offered, loaded.get("target"), loaded.get("transformer"))
    except NoUsablePrefix as error:
        return {"metadata_prefix": [str(error)]}
    loaded["metadata_prefix"] = choice.prefix
    loaded["transformer"] = choice.transformer
    loaded["metadata_prefix_choice"] = choice.reason
    if loaded.get("missing_creator") is not None and not current_oai_harvester.transformers.takes(
        choice.transformer, "missing_creator"
    ):
        return {
            "missing_creator": [
                f"Transformer {choice.transformer}, picked with {choice.prefix}, has no use for "
                f"it; leave it empty."
            ]
        }
    return {}
