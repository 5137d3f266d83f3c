"""Blueprint factories (``invenio_base.api_blueprints`` and ``invenio_base.blueprints``)."""

from __future__ import annotations

from flask import Blueprint, Flask, abort, current_app, render_template


def create_harvesters_bp(app: Flask) -> Blueprint:
    """``/api/oai-harvest/harvesters``."""
    return app.extensions["oarepo-oaipmh-harvester"].harvesters_resource.as_blueprint()


def create_records_bp(app: Flask) -> Blueprint:
    """``/api/oai-harvest/records``."""
    return app.extensions["oarepo-oaipmh-harvester"].records_resource.as_blueprint()


def create_templates_bp(app: Flask) -> Blueprint:
    """No routes: makes ``oarepo_oaipmh_harvester/templates`` (e-mails, admin pages) loadable.

    Registered in both applications, because reports are rendered wherever a run ends.
    An instance overrides a template by putting its own under the same name in its
    ``templates`` folder, which Flask searches first.
    """
    return Blueprint(
        "oarepo_oaipmh_harvester", "oarepo_oaipmh_harvester", template_folder="templates"
    )


def create_public_bp(app: Flask) -> Blueprint:
    """``/about/harvest``: the sources this site harvests, for everybody, when the site
    turns it on (OAI_HARVESTER_PUBLIC_SOURCES_PAGE)."""
    blueprint = Blueprint("oarepo_oaipmh_harvester_public", __name__)

    @blueprint.route("/about/harvest")
    def harvested_sources() -> str:
        if not current_app.config["OAI_HARVESTER_PUBLIC_SOURCES_PAGE"]:
            abort(404)
        from ..proxies import current_harvester_service

        return render_template(
            "oarepo_oaipmh_harvester/public/sources.html",
            sources=current_harvester_service.public_sources(),
        )

    return blueprint
