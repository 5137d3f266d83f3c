"""The total time one HTTP exchange may take, however slowly the provider sends.

Decision owned here: when an exchange has taken too long, and how it is stopped.  The read
timeout only bounds each read from the socket; a provider sending a byte a second never
trips it.  An :class:`Exchange` is armed when the request is sent (by the connection, see
:mod:`.adapter`, so that each retry of urllib3 starts afresh) and, when ``request_deadline``
passes, a timer shuts the connection's socket down: whatever read is blocked returns at
once, wherever it is (status line, headers or body), and the transport reports
:class:`~.errors.RequestDeadlineExceeded`.  Checking the clock between chunks alone would not
do: one read of a chunk can itself take as long as the provider likes.

A :class:`Budget` bounds a series of exchanges (the preflight check, which an operator waits
for): while one is :func:`spending`, every exchange this thread starts is armed for what is
left of it at most, and no retry waits past it.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

_current = threading.local()


def _shutdown(sock: socket.socket | None) -> None:
    if sock is None:
        return
    try:
        # socket.socket's own method: an SSLSocket's shutdown() would also drop its TLS
        # state under the feet of the thread that is reading.
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass


class Budget:
    """The total time a series of exchanges may take, the waits between retries included."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.ends_at = time.monotonic() + seconds

    def remaining(self) -> float:
        return max(self.ends_at - time.monotonic(), 0.0)

    @property
    def spent(self) -> bool:
        return self.remaining() <= 0


def current_budget() -> Budget | None:
    """The budget this thread's exchanges are spending, if any."""
    return getattr(_current, "budget", None)


@contextmanager
def spending(seconds: float | None) -> Iterator[Budget | None]:
    """Bound every exchange this thread starts in the block by `seconds` in all (None: no
    bound beyond each exchange's own deadline)."""
    previous = current_budget()
    _current.budget = Budget(seconds) if seconds is not None else None
    try:
        yield _current.budget
    finally:
        _current.budget = previous


class Exchange:
    """The deadline of one HTTP exchange: armed by :meth:`start`, ended by :meth:`finish`."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self.started_at: float | None = None
        self._armed_for = seconds
        self._sock: socket.socket | None = None
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()
        self._done = False

    def start(self, sock: socket.socket | None = None) -> None:
        """The deadline counts from now; ``sock`` is shut down when it passes.

        Called again for the next attempt of the same request (urllib3 retries), which gets
        a full deadline of its own - unless this one has already passed. Within a
        :class:`Budget`, no more than what is left of it; nothing left: expired at once.
        """
        with self._lock:
            if self._done or self.expired:
                return
            if self._timer is not None:
                self._timer.cancel()
            self.started_at = time.monotonic()
            self._sock = sock
            budget = current_budget()
            self._armed_for = min(self.seconds, budget.remaining()) if budget else self.seconds
            if self._armed_for <= 0:
                self.expired = True
                _shutdown(sock)
                return
            self._timer = threading.Timer(self._armed_for, self._expire)
            self._timer.daemon = True
            self._timer.start()

    def pause(self) -> None:
        """Between attempts (urllib3 waits before retrying): the wait is not the exchange's
        time, and the next attempt's :meth:`start` re-arms.  A deadline that has already
        passed stays passed."""
        with self._lock:
            if self._timer is not None and not self.expired:
                self._timer.cancel()
                self._timer = None
                self.started_at = None
                self._sock = None

    def attach(self, sock: socket.socket | None) -> None:
        """The socket became known after :meth:`start` (it is opened by the request).

        The socket itself is kept, not its connection: http.client hands a socket over to
        a response that will close it (no Content-Length), and the connection forgets it.
        """
        with self._lock:
            if self._done or sock is None:
                return
            self._sock = sock
            if self.expired:
                _shutdown(sock)

    @property
    def started(self) -> bool:
        return self.started_at is not None

    def passed(self) -> bool:
        """Whether the deadline has passed (the timer may not have fired yet)."""
        if self.expired:
            return True
        return self.started_at is not None and time.monotonic() - self.started_at > self._armed_for

    def _expire(self) -> None:
        with self._lock:
            if self._done:
                return
            self.expired = True
            _shutdown(self._sock)

    def finish(self) -> None:
        """Disarm; from now on the connection belongs to the pool again."""
        with self._lock:
            self._done = True
            if self._timer is not None:
                self._timer.cancel()
            self._sock = None


def current() -> Exchange | None:
    """The exchange this thread is sending, if any."""
    return getattr(_current, "exchange", None)


@contextmanager
def active(exchange: Exchange) -> Iterator[Exchange]:
    """Make ``exchange`` this thread's current one until the block ends, then disarm it."""
    previous = current()
    _current.exchange = exchange
    try:
        yield exchange
    finally:
        _current.exchange = previous
        exchange.finish()


__all__ = ["Budget", "Exchange", "active", "current", "current_budget", "spending"]
