"""Stand-ins for the UI endpoints of invenio-app-rdm that RDM builds links to.

Publishing a record builds its ``self_html`` and file links with these endpoint names; the
real blueprints live in invenio-app-rdm, which the harvester does not need.
"""

from __future__ import annotations

from flask import Blueprint


def create_records_ui_blueprint(app) -> Blueprint:
    blueprint = Blueprint("invenio_app_rdm_records", __name__)

    def placeholder(**kwargs) -> str:
        return ""

    for rule, endpoint in (
        ("/records/<pid_value>", "record_detail"),
        ("/records/<pid_value>/latest", "record_latest"),
        ("/records/<pid_value>/files/<path:filename>", "record_file_download"),
        ("/records/<pid_value>/preview/<path:filename>", "record_file_preview"),
        ("/uploads/<pid_value>", "deposit_edit"),
        ("/<any(doi):pid_scheme>/<path:pid_value>", "record_from_pid"),
    ):
        blueprint.add_url_rule(rule, endpoint, placeholder)
    return blueprint
