"""Signals other parts of an instance (reports, metrics) can subscribe to."""

from blinker import Namespace

_signals = Namespace()

harvest_finished = _signals.signal("oarepo-oaipmh-harvester.harvest-finished")
"""Sent when a harvest run ends, whatever its outcome.

Sender: the Flask app. Keyword arguments:
``harvester_id`` (str), ``run_id`` (UUID or None), ``status`` ("SUCCESS", "PARTIAL_SUCCESS"
or "FAILED"), ``summary`` (HarvestSummary or None when the run failed before writing) and
``error`` (an operator-readable message, or None). Receivers must not raise: a failing
receiver is logged and never changes the run's outcome.
"""
