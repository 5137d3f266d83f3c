"""The admin panel's own JavaScript: a "Run now" form that says the run was queued and links it."""

from invenio_assets.webpack import WebpackThemeBundle

theme = WebpackThemeBundle(
    __name__,
    "assets",
    default="semantic-ui",
    themes={
        "semantic-ui": dict(
            entry={
                "oarepo-oaipmh-harvester-admin": "./js/oarepo_oaipmh_harvester/admin.js",
            },
            dependencies={},
            aliases={"@js/oarepo_oaipmh_harvester": "js/oarepo_oaipmh_harvester"},
        )
    },
)
