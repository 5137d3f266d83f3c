"""Webpack alias that points Semantic UI's ``../../theme.config`` at this package's copy.

Its ``@siteFolder`` is Semantic UI's own default theme: no site overrides. Where
invenio-app-rdm is installed, its theme bundle defines that alias itself (a second one fails
the build: "Duplicated alias") and points it at the instance's ``less/theme.config``, which
this package also provides: the same with InvenioRDM's theme.
"""

from importlib.util import find_spec

from invenio_assets.webpack import WebpackThemeBundle

aliases = (
    {}
    if find_spec("invenio_app_rdm")
    else {"../../theme.config$": "less/oaiharvest_test_theme/theme.config"}
)

theme = WebpackThemeBundle(
    __name__,
    "assets",
    default="semantic-ui",
    themes={"semantic-ui": dict(entry={}, dependencies={}, aliases=aliases)},
)
