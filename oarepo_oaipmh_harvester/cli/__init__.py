"""`invenio oai ...`: a thin shell over the harvester services, for scripts and operators.

``harvesters`` registers, changes and removes harvesters (and purges their records); ``runs``
starts harvests, repairs and previews in this process and lists what a harvester tracks;
``history`` shows its last runs in numbers.
"""

from __future__ import annotations

from . import deletions, harvesters, history, runs, undo  # noqa: F401 - the commands register themselves
from .groups import oai

__all__ = ["oai"]
