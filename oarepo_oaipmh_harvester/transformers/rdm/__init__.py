"""Crosswalks into InvenioRDM records: ``oai_dc_rdm``, ``oai_datacite_rdm``, ``lido_rdm`` and
``oai_openaire_rdm``.

:mod:`.dublin_core` and :mod:`.datacite` are the two transformers (the DataCite rules of a few
elements in ``datacite_names``, ``datacite_identifiers``, ``datacite_funding`` and
``datacite_places``), and :mod:`.lido` reads museum objects in LIDO (with :mod:`.lido_read`,
:mod:`.lido_events` and :mod:`.lido_rights`), and :mod:`.openaire` OpenAIRE v4 literature records
(``oai_openaire_rdm``, with the ``openaire_*`` modules; it reads the elements OpenAIRE borrows
from DataCite with :mod:`.datacite`'s rules); what they share is :mod:`.base` (:class:`~.base.RDMTransformer`: the
instance's settings, the vocabulary cache and the warnings of one run, and the look-ups every
rule uses), :mod:`.vocabularies` (cached look-ups in the instance's vocabularies),
:mod:`.helpers` (pure mapping helpers) and :mod:`.xml` (reading metadata by local names).

invenio-rdm-records is an optional extra: no module here imports it at module level, so the
entry points exist in every install and a transformer says at the start of a run that the
extra is missing.
"""

from .base import RDMTransformer
from .datacite import DataCiteRDMTransformer
from .dublin_core import DublinCoreRDMTransformer
from .lido import LIDORDMTransformer
from .openaire import OpenAIRERDMTransformer

__all__ = (
    "DataCiteRDMTransformer",
    "DublinCoreRDMTransformer",
    "LIDORDMTransformer",
    "OpenAIRERDMTransformer",
    "RDMTransformer",
)
