"""Which transformer a harvester's records go through, and whether they fit its target.

Decision owned here: the transformer a harvester that names none gets (into InvenioRDM's
records: the one for its metadata prefix), why a transformer's records cannot go into a
target (InvenioRDM's records take only what an InvenioRDM transformer makes, and no other
target takes that; a site's own transformer is left to the site), and what a harvester does
with a record without a creator, in words.
"""

from __future__ import annotations

from flask import current_app

from ..proxies import current_oai_harvester
from ..text import echoed
from ..transformers.registry import TransformerOutput
from .targets import writable_target_ids


def target_is_rdm(target: str | None) -> bool:
    """Whether the records service `target` keeps InvenioRDM's records."""
    from invenio_records_resources.proxies import current_service_registry

    from ..harvest.targets import is_rdm_service

    if target not in writable_target_ids():
        return False
    return is_rdm_service(current_service_registry.get(target))


def default_transformer(target: str | None, metadata_prefix: str | None) -> str:
    """The transformer of a harvester that names none: into InvenioRDM's records, the one for
    its metadata prefix (OAI_HARVESTER_RDM_TRANSFORMERS); else
    OAI_HARVESTER_DEFAULT_TRANSFORMER."""
    config = current_app.config
    if target_is_rdm(target):
        natural = config["OAI_HARVESTER_RDM_TRANSFORMERS"].get(metadata_prefix or "")
        if natural:
            return natural
    return config["OAI_HARVESTER_DEFAULT_TRANSFORMER"]


def _output_of(name: str) -> TransformerOutput | None:
    try:
        return current_oai_harvester.transformers.output_of(name)
    except (KeyError, ValueError):  # unknown or misconfigured: reported where it is used
        return None


def transformer_misfit(
    target: str | None, metadata_prefix: str | None, transformer: str | None
) -> str | None:
    """Why the records of `transformer` (None: the default one) cannot go into `target`, or
    None when they can (or when the target or the transformer is refused for itself)."""
    if target not in writable_target_ids():
        return None
    name = transformer or default_transformer(target, metadata_prefix)
    output = _output_of(name)
    if output is None or output is TransformerOutput.SITE:
        return None
    if target_is_rdm(target):
        if output is TransformerOutput.INVENIORDM:
            return None
        rdm_ones = [
            known
            for known in current_oai_harvester.transformers.names()
            if _output_of(known) is TransformerOutput.INVENIORDM
        ]
        choices = f"{', '.join(rdm_ones) or 'none is registered'}, or one of the site's own"
        if transformer is None:
            return (
                f"InvenioRDM's records ({echoed(target)}) take only what an InvenioRDM "
                f"transformer makes, and none is set for metadata prefix "
                f"{echoed(metadata_prefix)} (OAI_HARVESTER_RDM_TRANSFORMERS): choose one "
                f"({choices})."
            )
        natural = current_app.config["OAI_HARVESTER_RDM_TRANSFORMERS"].get(metadata_prefix or "")
        advice = (
            f"choose {natural}, the InvenioRDM transformer for {metadata_prefix} (or leave it "
            f"empty for it)"
            if natural
            else f"choose an InvenioRDM transformer ({choices})"
        )
        return (
            f"Transformer {echoed(name)} makes {output.value} that InvenioRDM's records "
            f"({echoed(target)}) refuse: {advice}."
        )
    if output is TransformerOutput.INVENIORDM:
        return (
            f"Transformer {echoed(name)} makes InvenioRDM records, and {echoed(target)} is not "
            f"InvenioRDM's records service: choose a transformer for it (such as "
            f"{current_app.config['OAI_HARVESTER_DEFAULT_TRANSFORMER']}), or leave it empty."
        )
    return None


def missing_creator_in_words(transformer: str, stored: str | None) -> str:
    """What a harvester does with a record without a creator, for pages and the CLI."""
    if stored:
        return stored
    if not current_oai_harvester.transformers.takes(transformer, "missing_creator"):
        return "not applicable (the transformer is not an InvenioRDM one)"
    from ..transformers.rdm.base import configured_missing_creator

    factory, options = current_oai_harvester.transformers.first_step(transformer)
    if options.get("missing_creator"):
        return f"{options['missing_creator']} (an option of transformer {transformer})"
    name = getattr(factory, "name", transformer)
    return f"{configured_missing_creator(name, current_app.config)} (the default of {name})"
