"""Moved to :mod:`oarepo_oaipmh_harvester.transformers` (``base``, ``registry``,
``dublin_core``); this alias goes in the next release."""

# The package's own names, so that the alias cannot drift from what it stands for.
from ..transformers import *  # noqa: F403
from ..transformers import __all__  # noqa: F401
