"""A TCP proxy in front of the search server that a test can take down and bring back."""

from __future__ import annotations

import socket
import threading
import time


class SearchProxy:
    """Forwards 127.0.0.1:<port> to the search server; while `down`, connections are cut.

    ``_bulk`` requests alone can be kept from the server: `bulk` "hold" keeps the client
    waiting for an answer (and sets `bulk_held`: a test can kill the client at exactly that
    point), "withhold answer" forwards the request but not the server's answer (and sets
    `bulk_held`), "refuse" closes the connection; "forward" (the default) forwards them.
    """

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self._down = False
        self.bulk = "forward"
        self.bulk_held = threading.Event()
        self._answers_withheld: set[socket.socket] = set()
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._closed = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def down(self) -> bool:
        return self._down

    @down.setter
    def down(self, value: bool) -> None:
        """Going down cuts the open (keep-alive) connections too: nothing more gets through."""
        self._down = value
        if value:
            with self._lock:
                sockets, self._open = list(self._open), set()
            for end in sockets:
                try:
                    end.shutdown(socket.SHUT_RDWR)
                    end.close()
                except OSError:
                    pass

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self.down:
                client.close()  # as a search server that is down or restarting
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=10)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open.update((client, upstream))
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(source, sink), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while not self.down and (data := source.recv(65536)):
                if source in self._answers_withheld:
                    while self.bulk == "withhold answer" and not self._closed.is_set():
                        time.sleep(0.05)
                    return
                if self.bulk != "forward" and b"/_bulk" in data.split(b"\r\n", 1)[0]:
                    if self.bulk == "withhold answer":
                        self._answers_withheld.add(sink)
                        sink.sendall(data)
                        self.bulk_held.set()
                        continue
                    self.bulk_held.set()
                    # On hold: no answer and no closed connection, the client waits as for a
                    # busy server until the test is done with it.
                    while self.bulk == "hold" and not self._closed.is_set():
                        time.sleep(0.05)
                    return  # never forwarded; the connection is closed below
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                try:
                    end.close()
                except OSError:
                    pass

    def close(self) -> None:
        self._closed.set()
        self._listener.close()
