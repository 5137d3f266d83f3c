"""Whether a list that keeps sending resumption tokens is still getting anywhere.

Decision owned here: when a list is given up although each token is new.  Repeated tokens
and long runs of empty pages are caught by :mod:`.streams`; a hostile or broken provider
can dodge both (a new token every time, a record on every ninth page).  So a list also
fails when

- it reaches ``max_pages`` pages (:class:`~.errors.TooManyPages`; the default, 100,000, is
  five times the pages of a 200,000-record harvest at 10 records a page),
- its ``cursor`` passes the ``completeListSize`` it announces
  (:class:`~.errors.NoProgress`), or
- over the last ``progress_window`` pages it delivered fewer than ``min_items_per_page``
  items a page on average (:class:`~.errors.NoProgress`).  A page's progress is its number
  of items or, if larger, how far it moved the cursor while the provider gives a
  ``completeListSize`` to bound it: a provider that filters a long list into a small set
  may send many empty pages, but its cursor moves.  Lists shorter than the window are
  never judged by this rule; an occasional empty page never trips it.
"""

from __future__ import annotations

from collections import deque

from .errors import NoProgress, TooManyPages
from .options import ProtocolOptions


class ProgressGuard:
    """Watches the pages of one list (restarts reset it) and raises when it goes nowhere."""

    def __init__(self, options: ProtocolOptions, verb: str) -> None:
        self.verb = verb
        self.max_pages = options.max_pages
        self.window = options.progress_window
        self.min_items_per_page = options.min_items_per_page
        self.reset()

    def reset(self) -> None:
        self._recent: deque[int] = deque(maxlen=self.window)
        self._last_cursor: int | None = None

    def check(
        self,
        *,
        url: str,
        pages: int,
        items: int,
        cursor: int | None,
        complete_list_size: int | None,
        token: str,
    ) -> int:
        """A page arrived with ``token`` to follow; raise if following it is pointless.

        Returns the page's progress: its items, or how far it moved a bounded cursor.
        """
        if pages >= self.max_pages:
            raise TooManyPages(
                f"The {self.verb} list at {url} has gone on for {pages} pages, the limit "
                f"(max_pages); giving up rather than following its tokens indefinitely.",
                url=url,
                token=token,
                pages=pages,
            )
        bounded = cursor is not None and complete_list_size is not None
        if bounded and cursor > complete_list_size:  # type: ignore[operator]
            raise NoProgress(
                f"The provider at {url} is at cursor {cursor} of a {self.verb} list it says "
                f"has {complete_list_size} items (completeListSize), after {pages} pages; "
                f"the list does not end.",
                url=url,
                token=token,
                limit="completeListSize",
            )
        advance = 0
        if bounded and self._last_cursor is not None and cursor > self._last_cursor:  # type: ignore[operator]
            advance = cursor - self._last_cursor  # type: ignore[operator]
        if cursor is not None:
            self._last_cursor = cursor
        progress = max(items, advance)
        self._recent.append(progress)
        if (
            self.min_items_per_page > 0
            and len(self._recent) == self.window
            and sum(self._recent) < self.min_items_per_page * self.window
        ):
            raise NoProgress(
                f"The provider at {url} delivered {sum(self._recent)} items in the last "
                f"{self.window} {self.verb} pages (progress_window), fewer than "
                f"{self.min_items_per_page:g} a page (min_items_per_page), while sending a "
                f"new resumption token every time; giving up rather than looping.",
                url=url,
                token=token,
                limit="min_items_per_page",
            )
        return progress


__all__ = ["ProgressGuard"]
