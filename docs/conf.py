"""Sphinx configuration of the oarepo-oaipmh-harvester documentation.

Build: ``sphinx-build -W -b html docs docs/_build/html`` (``./run.sh test`` does, with -W:
a warning fails the build). No intersphinx: the build needs no network.
"""

import os
import re
import sys

# autodoc reads this checkout's modules (config.py), not another installed copy.
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, ROOT)

import oarepo_oaipmh_harvester  # noqa: E402

project = "oarepo-oaipmh-harvester"
author = "CESNET z.s.p.o. and contributors"
copyright = "CESNET z.s.p.o. and contributors"
version = release = oarepo_oaipmh_harvester.__version__

extensions = ["sphinx.ext.autodoc"]

# config.py documents each key in an attribute docstring; show them in source order.
autodoc_member_order = "bysource"
autodoc_default_options = {"members": True}

master_doc = "index"
exclude_patterns = ["_build"]
nitpicky = False

html_theme = "alabaster"
html_theme_options = {
    "description": "Keep an Invenio repository in step with remote OAI-PMH data providers.",
    "page_width": "1100px",
    "sidebar_width": "230px",
}
html_static_path = []

# config.py's docstrings write inline code both as ``x`` and as `x` (Markdown style, also
# `Record`s); read the single-backtick form as inline code too, so that it renders as code
# and a suffix after it is not an unterminated reference.
_SINGLE_BACKTICKS = re.compile(r"(?<![`\w])`([^`\n]+)`(?![`_])(\w?)")


def _inline_code(app, what, name, obj, options, lines):
    if not name.startswith("oarepo_oaipmh_harvester.config"):
        return
    for index, line in enumerate(lines):
        lines[index] = _SINGLE_BACKTICKS.sub(
            lambda m: f"``{m.group(1)}``" + (f"\\ {m.group(2)}" if m.group(2) else ""), line
        )


def setup(app):
    app.connect("autodoc-process-docstring", _inline_code)
