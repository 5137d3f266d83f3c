"""The connections a client opens: checked addresses, and the request deadline armed.

Decision owned here: which socket an HTTP request actually goes out on.  A
:class:`GuardedAdapter` (a requests ``HTTPAdapter``) makes urllib3 open its connections
through :class:`_GuardedConnection`, which resolves the host name once, refuses if any of
its addresses is in a forbidden network (:mod:`.networks`), connects to those very
addresses, and checks the connected peer again.  Checking a name and then letting the
connection resolve it anew would let a DNS answer that changes in between (rebinding)
through.  Every request sent on such a connection also arms the current
:class:`~.deadline.Exchange`.

Requests that go through a proxy use the proxy's connection, not ours; the transport then
checks the target name itself before sending (the proxy resolves it, so rebinding there is
the proxy's to prevent).
"""

from __future__ import annotations

import socket
from typing import Any

from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NameResolutionError, NewConnectionError
from urllib3.util.connection import _set_socket_options, allowed_gai_family
from urllib3.util.timeout import _DEFAULT_TIMEOUT

from . import deadline
from .errors import RequestDeadlineExceeded
from .networks import IPNetwork, check_address


class _GuardedConnection:
    """Mixed into urllib3's HTTP(S)Connection; ``forbidden`` is set per adapter."""

    forbidden: tuple[IPNetwork, ...] = ()

    def _new_conn(self) -> socket.socket:
        if not self.forbidden:
            return super()._new_conn()  # type: ignore[misc]
        conn: Any = self
        host = conn._dns_host.strip("[]")
        try:
            infos = socket.getaddrinfo(host, conn.port, allowed_gai_family(), socket.SOCK_STREAM)
        except socket.gaierror as error:
            raise NameResolutionError(conn.host, conn, error) from error
        for info in infos:  # any forbidden address refuses the name, not only the first
            check_address(info[4][0], self.forbidden, host=conn.host)
        failure: OSError | None = None
        for family, kind, proto, _, address in infos:
            sock = socket.socket(family, kind, proto)
            try:
                _set_socket_options(sock, conn.socket_options)
                if conn.timeout is not _DEFAULT_TIMEOUT:
                    sock.settimeout(conn.timeout)
                if conn.source_address:
                    sock.bind(conn.source_address)
                sock.connect(address)
                check_address(sock.getpeername()[0], self.forbidden, host=conn.host)
                return sock
            except OSError as error:
                sock.close()
                failure = error
            except BaseException:
                sock.close()
                raise
        if isinstance(failure, TimeoutError):
            raise ConnectTimeoutError(
                conn, f"Connection to {conn.host} timed out. (connect timeout={conn.timeout})"
            ) from failure
        raise NewConnectionError(
            conn, f"Failed to establish a new connection: {failure}"
        ) from failure

    def request(self, *args: Any, **kwargs: Any) -> None:
        exchange = deadline.current()
        if exchange is not None:
            if not exchange.expired:
                exchange.start(getattr(self, "sock", None))
            if exchange.expired:
                # urllib3 retrying after the deadline shut the socket, or a budget spent: no
                # further attempt.
                raise RequestDeadlineExceeded(
                    f"The request deadline of {exchange.seconds:g}s (request_deadline) passed.",
                    deadline=exchange.seconds,
                )
        super().request(*args, **kwargs)  # type: ignore[misc]
        if exchange is not None:
            # Connected now (a new connection connects while sending): the status line,
            # the headers and the body are read from this socket.
            exchange.attach(getattr(self, "sock", None))


class GuardedAdapter(HTTPAdapter):
    """An ``HTTPAdapter`` whose connections refuse ``forbidden`` networks and keep deadlines."""

    def __init__(self, forbidden: tuple[IPNetwork, ...], **kwargs: Any) -> None:
        self.forbidden = forbidden
        super().__init__(**kwargs)

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        attrs = {"forbidden": self.forbidden}
        http = type("GuardedHTTPConnection", (_GuardedConnection, HTTPConnection), attrs)
        https = type("GuardedHTTPSConnection", (_GuardedConnection, HTTPSConnection), attrs)
        # A copy: urllib3's default mapping is shared by every PoolManager.
        self.poolmanager.pool_classes_by_scheme = {
            "http": type(
                "GuardedHTTPConnectionPool", (HTTPConnectionPool,), {"ConnectionCls": http}
            ),
            "https": type(
                "GuardedHTTPSConnectionPool", (HTTPSConnectionPool,), {"ConnectionCls": https}
            ),
        }


__all__ = ["GuardedAdapter"]
