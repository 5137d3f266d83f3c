"""Proxies to the extension and its services."""

from flask import current_app
from werkzeug.local import LocalProxy

current_oai_harvester = LocalProxy(lambda: current_app.extensions["oarepo-oaipmh-harvester"])
"""The extension."""

current_harvester_service = LocalProxy(lambda: current_oai_harvester.harvester_service)
"""The harvester service."""

current_harvest_runs_service = LocalProxy(lambda: current_oai_harvester.runs_service)
"""The runs service: start, list and read runs of harvesters."""

current_harvested_records_service = LocalProxy(lambda: current_oai_harvester.records_service)
"""The harvested-record service."""
