"""A canned HTTP server and OAI-PMH XML builders, for tests that need exact wire control."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit
from xml.sax.saxutils import escape, quoteattr

OAI_NS = "http://www.openarchives.org/OAI/2.0/"
RESPONSE_DATE = "2024-06-01T12:00:00Z"


@dataclass
class Hit:
    """One request as the server received it."""

    path: str
    query: str
    args: dict[str, str]
    headers: dict[str, str]
    at: float

    @property
    def arg_names(self) -> set[str]:
        return set(self.args)


@dataclass
class Reply:
    status: int = 200
    body: bytes | str = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    truncate: bool = False  # announce more bytes than sent, then close (a dropped connection)
    no_length: bool = False  # no Content-Length: body ends when the connection closes
    trickle: float = 0.0  # seconds between pieces of `trickle_size` bytes (a slow sender)
    trickle_size: int = 1
    trickle_headers: bool = False  # trickle the headers too, not only the body

    def payload(self) -> bytes:
        return self.body.encode("utf-8") if isinstance(self.body, str) else self.body


Responder = Callable[[Hit], "Reply | str | bytes"]


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], OSError):
            return  # a client that hung up (on purpose, in the hostile tests)
        super().handle_error(request, client_address)


class CannedServer:
    """Answers each request with whatever ``responder(hit)`` returns."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.hits: list[Hit] = []
        self.sent: list[int] = []  # body bytes each trickled reply got out before it ended
        self.finished = threading.Event()  # set when a trickled reply ends (sent or cut off)
        self.responder: Responder = lambda hit: Reply(500, "no responder")
        server = _Server((host, port), _Handler)
        server.daemon_threads = True
        server.canned = self  # type: ignore[attr-defined]
        self._server = server
        host, port = server.server_address[:2]
        self.base_url = f"http://{host}:{port}/oai"
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.005}
        )
        self._thread.daemon = True
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, responder: Responder) -> None:
        self.responder = responder

    def answer_in_order(self, *replies: Reply | str | bytes) -> None:
        """Each request gets the next reply; the last one repeats."""
        queue = list(replies)

        def responder(hit: Hit) -> Reply | str | bytes:
            return queue.pop(0) if len(queue) > 1 else queue[0]

        self.responder = responder

    def answer_tokens(self, first: Reply | str, pages: dict[str, Reply | str]) -> None:
        """First request -> ``first``; a continuation -> ``pages[token]``."""

        def responder(hit: Hit) -> Reply | str:
            token = hit.args.get("resumptionToken")
            if token is None:
                return first
            if token not in pages:
                return envelope(error("badResumptionToken", f"unknown token {token!r}"))
            return pages[token]

        self.responder = responder


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Buffered, so headers and body leave in one segment (no Nagle/delayed-ACK stalls).
    wbufsize = -1

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        canned: CannedServer = self.server.canned  # type: ignore[attr-defined]
        url = urlsplit(self.path)
        parsed = parse_qs(url.query, keep_blank_values=True)
        hit = Hit(
            path=url.path,
            query=url.query,
            args={key: values[0] for key, values in parsed.items()},
            headers={key.lower(): value for key, value in self.headers.items()},
            at=time.monotonic(),
        )
        canned.hits.append(hit)
        reply = canned.responder(hit)
        if not isinstance(reply, Reply):
            reply = Reply(body=reply, headers={"Content-Type": "text/xml; charset=utf-8"})
        if reply.delay:
            time.sleep(reply.delay)
        body = reply.payload()
        if reply.trickle:
            self._trickle(canned, reply, body)
            return
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        if reply.truncate:
            self.send_header("Content-Length", str(len(body) * 2))
        elif reply.no_length:
            self.send_header("Connection", "close")
            self.close_connection = True
        else:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
            self.wfile.flush()
        except OSError:
            return
        if reply.truncate:
            self.close_connection = True

    def _trickle(self, canned: CannedServer, reply: Reply, body: bytes) -> None:
        """Send a few bytes at a time, until done or the client hangs up."""
        self.close_connection = True
        head = f"HTTP/1.1 {reply.status} OK\r\n".encode()
        length = {} if reply.no_length else {"Content-Length": str(len(body))}
        for name, value in {**reply.headers, **length}.items():
            head += f"{name}: {value}\r\n".encode()
        head += b"\r\n"
        sent = 0
        try:
            if reply.trickle_headers:
                pieces = [head[i : i + 4] for i in range(0, len(head), 4)]
                for piece in pieces:
                    self.wfile.write(piece)
                    self.wfile.flush()
                    time.sleep(reply.trickle)
            else:
                self.wfile.write(head)
                self.wfile.flush()
            for start in range(0, len(body), reply.trickle_size):
                self.wfile.write(body[start : start + reply.trickle_size])
                self.wfile.flush()
                sent = start + reply.trickle_size
                time.sleep(reply.trickle)
        except OSError:
            pass
        finally:
            canned.sent.append(min(sent, len(body)))
            canned.finished.set()


# -- XML builders ---------------------------------------------------------------------------


def envelope(body: str, *, response_date: str = RESPONSE_DATE, declaration: str = "") -> str:
    declaration = declaration or '<?xml version="1.0" encoding="UTF-8"?>'
    return (
        f'{declaration}\n<OAI-PMH xmlns="{OAI_NS}">'
        f"<responseDate>{response_date}</responseDate>"
        f"<request>http://example.org/oai</request>{body}</OAI-PMH>"
    )


def error(code: str, message: str = "") -> str:
    return f"<error code={quoteattr(code)}>{escape(message)}</error>"


def header(
    identifier: str,
    datestamp: str = "2024-01-01T00:00:00Z",
    *,
    deleted: bool = False,
    sets: Iterable[str] = (),
) -> str:
    status = ' status="deleted"' if deleted else ""
    specs = "".join(f"<setSpec>{escape(spec)}</setSpec>" for spec in sets)
    return (
        f"<header{status}><identifier>{escape(identifier)}</identifier>"
        f"<datestamp>{escape(datestamp)}</datestamp>{specs}</header>"
    )


def record(
    identifier: str,
    title: str = "A title",
    datestamp: str = "2024-01-01T00:00:00Z",
    *,
    deleted: bool = False,
    sets: Iterable[str] = (),
    raw_title: bool = False,
) -> str:
    head = header(identifier, datestamp, deleted=deleted, sets=sets)
    if deleted:
        return f"<record>{head}</record>"
    title_xml = title if raw_title else escape(title)
    return (
        f"<record>{head}<metadata>"
        '<oai_dc:dc xmlns:oai_dc="http://www.openarchives.org/OAI/2.0/oai_dc/" '
        'xmlns:dc="http://purl.org/dc/elements/1.1/">'
        f"<dc:title>{title_xml}</dc:title></oai_dc:dc></metadata></record>"
    )


def token(value: str | None, *, cursor: int | None = None, size: int | None = None) -> str:
    attrs = ""
    if size is not None:
        attrs += f' completeListSize="{size}"'
    if cursor is not None:
        attrs += f' cursor="{cursor}"'
    if value is None:
        return f"<resumptionToken{attrs}/>"
    return f"<resumptionToken{attrs}>{escape(value)}</resumptionToken>"


def list_page(verb: str, items: Iterable[str], resumption: str = "") -> str:
    return envelope(f"<{verb}>{''.join(items)}{resumption}</{verb}>")


def records_page(*items: str, resumption: str = "") -> str:
    return list_page("ListRecords", items, resumption)


def identify(
    *,
    granularity: str | None = "YYYY-MM-DDThh:mm:ssZ",
    deleted_record: str = "persistent",
    response_date: str = RESPONSE_DATE,
    extra: str = "",
) -> str:
    granularity_xml = f"<granularity>{granularity}</granularity>" if granularity else ""
    return envelope(
        "<Identify><repositoryName>Canned</repositoryName>"
        "<baseURL>http://example.org/oai</baseURL><protocolVersion>2.0</protocolVersion>"
        "<adminEmail>a@example.org</adminEmail><adminEmail>b@example.org</adminEmail>"
        "<earliestDatestamp>2001-02-03T04:05:06Z</earliestDatestamp>"
        f"<deletedRecord>{deleted_record}</deletedRecord>{granularity_xml}"
        f"<compression>gzip</compression><compression>deflate</compression>{extra}</Identify>",
        response_date=response_date,
    )
