"""What the terminal shows while an `invenio oai` command runs: the command's own output.

Decision owned here: an operator reads one sentence per failure, not a traceback nor an SQL
statement with its parameters, and the command's summary, not the log lines of a run. The
application's log keeps everything (traces at ERROR, with ``exc_info``); only its handlers
that write to the terminal are quiet during a command, unless ``invenio oai -v`` asks.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa
from flask.logging import default_handler

log = logging.getLogger(__name__)

TRACE_HINT = "The trace is in the application's log; 'invenio oai -v ...' prints it here."


def _critical_only(record: logging.LogRecord) -> bool:
    return record.levelno >= logging.CRITICAL


def _terminal_handlers() -> set[logging.Handler]:
    """The log's handlers that write to the terminal: plain stream handlers (Flask's and
    invenio-logging's console handler, a site's ``logging.StreamHandler``) and Python's last
    resort. Files, Sentry, invenio-jobs' run log and test captures are other classes."""
    loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    handlers = {
        handler
        for logger in loggers
        if isinstance(logger, logging.Logger)
        for handler in logger.handlers
        if type(handler) is logging.StreamHandler
    }
    # Flask's handler joins the application's logger when an application is created, which
    # a command may do after it started.
    handlers.add(default_handler)
    if logging.lastResort is not None:
        handlers.add(logging.lastResort)
    return handlers


@contextmanager
def log_off_the_terminal() -> Iterator[None]:
    """While the block runs, log records below CRITICAL do not reach the terminal."""
    handlers = _terminal_handlers()
    for handler in handlers:
        handler.addFilter(_critical_only)
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(_critical_only)


def in_one_sentence(error: BaseException) -> str:
    """What went wrong, for an operator: the database's own words for a database error
    (never the statement and its parameters), else the error's first line."""
    if isinstance(error, sa.exc.DBAPIError) and error.orig is not None:
        cause = _first_line(str(error.orig)) or type(error.orig).__name__
        if "database is locked" in cause:
            return (
                "The database is locked: another process is writing to it (SQLite lets one "
                "process write at a time); try again when it has finished."
            )
        return f"The database refused the command: {cause}."
    text = _first_line(str(error))
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or [""])[0].strip()


def report_failure(error: BaseException, command: str) -> str:
    """Log `error` with its trace (ERROR) and return the sentence the terminal shows."""
    log.error("invenio oai %s failed", command, exc_info=error)
    return f"{in_one_sentence(error)} {TRACE_HINT}"
