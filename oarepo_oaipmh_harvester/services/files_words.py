"""What a harvester does with a record's files, in words (pages, the command line, REST)."""

from __future__ import annotations

from typing import Any

from flask import current_app

from ..harvest.targets.options import FilesMode, files_defaults, files_options_of


def files_in_words(harvester: Any) -> str:
    """What a harvester does with a record's files, for pages and the CLI."""
    options = files_options_of(harvester, files_defaults(current_app.config))
    if options.mode is FilesMode.NONE:
        return "none: metadata only"
    if options.mode is FilesMode.LINK:
        return "link: the file URLs are kept on the record, nothing is downloaded"
    hosts = ", ".join(("the provider's host", *options.hosts))
    restricted = (
        "restricted files too (stored restricted)"
        if options.restricted
        else ("not the files the source marks restricted")
    )
    return (
        f"copy: files up to {options.max_size:,} bytes from {hosts}; {restricted}; a file that "
        f"cannot be fetched: {options.failure}; files changed at the source: {options.changes}"
    )
