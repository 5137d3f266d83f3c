"""Webpack alias that points Semantic UI's ``../../theme.config`` at this package's copy.

Its ``@siteFolder`` is Semantic UI's own default theme: no site overrides.
"""

from invenio_assets.webpack import WebpackThemeBundle

theme = WebpackThemeBundle(
    __name__,
    "assets",
    default="semantic-ui",
    themes={
        "semantic-ui": dict(
            entry={},
            dependencies={},
            aliases={
                "../../theme.config$": "less/oaiharvest_test_theme/theme.config",
            },
        )
    },
)
