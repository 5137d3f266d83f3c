"""A standalone OAI-PMH 2.0 data provider serving a `Corpus`, with switchable server bugs.

Built on the standard library only (`ThreadingHTTPServer` in a daemon thread) so that tests,
the demo command and the benchmark can run a real provider on 127.0.0.1 without a database.
Responses are built by string concatenation for speed; resumption tokens are stateless.
It is one module so that it stays a self-contained file that a subprocess (the benchmark's
provider) or another project can start without the rest of the package.
"""

from __future__ import annotations

import base64
import bisect
import gzip
import hashlib
import json
import re
import socket
import sys
import threading
import time
import traceback
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit
from xml.sax.saxutils import escape

from .corpus import DC_ELEMENTS, LIDO_NS, LIDO_SCHEMAS, Corpus, CorpusRecord, lido_document

OAI_NS = "http://www.openarchives.org/OAI/2.0/"
OAI_DC_NS = "http://www.openarchives.org/OAI/2.0/oai_dc/"
OAI_DC_SCHEMA = "http://www.openarchives.org/OAI/2.0/oai_dc.xsd"
DC_NS = "http://purl.org/dc/elements/1.1/"
XSI_NS = "http://www.w3.org/2001/XMLSchema-instance"

VERBS = (
    "Identify",
    "ListMetadataFormats",
    "ListSets",
    "ListIdentifiers",
    "ListRecords",
    "GetRecord",
)
# verb -> (required arguments, optional arguments, exclusive argument)
_VERB_ARGS: dict[str, tuple[frozenset[str], frozenset[str], str | None]] = {
    "Identify": (frozenset(), frozenset(), None),
    "ListMetadataFormats": (frozenset(), frozenset({"identifier"}), None),
    "ListSets": (frozenset(), frozenset(), "resumptionToken"),
    "ListIdentifiers": (
        frozenset({"metadataPrefix"}),
        frozenset({"from", "until", "set"}),
        "resumptionToken",
    ),
    "ListRecords": (
        frozenset({"metadataPrefix"}),
        frozenset({"from", "until", "set"}),
        "resumptionToken",
    ),
    "GetRecord": (frozenset({"identifier", "metadataPrefix"}), frozenset(), None),
}

UNSAFE_TOKEN_PREFIX = "a%2F b+c/d="
BAD_DATESTAMP = "2020-13-45 xx"

_ENVELOPE_START = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    f'<OAI-PMH xmlns="{OAI_NS}" xmlns:xsi="{XSI_NS}" '
    f'xsi:schemaLocation="{OAI_NS} http://www.openarchives.org/OAI/2.0/OAI-PMH.xsd">'
)
_DC_START = (
    f'<metadata><oai_dc:dc xmlns:oai_dc="{OAI_DC_NS}" xmlns:dc="{DC_NS}" '
    f'xmlns:xsi="{XSI_NS}" xsi:schemaLocation="{OAI_DC_NS} {OAI_DC_SCHEMA}">'
)
_DC_END = "</oai_dc:dc></metadata>"
_ATTR_ENTITIES = {'"': "&quot;", "\n": "&#10;", "\r": "&#13;", "\t": "&#9;"}
_DAY_RE = re.compile(r"\d{4}-\d{2}-\d{2}\Z")
_SECONDS_RE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z\Z")
_PLAIN_TOKEN_RE = re.compile(r"[A-Za-z0-9_-]+\Z")
_SELECTION_CACHE_SIZE = 16


@dataclass
class ProviderQuirks:
    """Server misbehaviour to switch on; tests mutate these between or during harvests."""

    fail_requests: int = 0
    fail_status: int = 503
    retry_after: str | None = "0"
    expire_tokens_after: int | None = None
    token_lifetime_seconds: float | None = None
    """A token older than this is badResumptionToken (invenio-oaiserver: 60 s)."""
    token_style: str = "plain"
    repeat_token: bool = False
    empty_pages_with_token: int = 0
    final_token: str = "empty"
    control_characters: bool = False
    malformed_xml: bool = False
    bad_datestamp_identifiers: set[str] = field(default_factory=set)
    offset_datestamps: bool = False
    gzip: bool = False
    delay_seconds: float = 0.0
    drop_set_on_resume: bool = False
    error_status: int = 200
    """HTTP status of OAI-PMH error documents: invenio-oaiserver (every InvenioRDM, Zenodo)
    sends noRecordsMatch, badResumptionToken and the others with 422."""
    empty_last_page: bool = False
    """A list whose last page is full still carries a token, and the page it leads to has no
    records and an empty token (invenio-oaiserver when the count is a multiple of its page
    size)."""
    server_error_for: set[str] = field(default_factory=set)
    """Identifiers whose GetRecord answers HTTP 500, as invenio-oaiserver does for a record
    deleted there."""
    require_basic_auth: tuple[str, str] | None = None
    """(user, password) a request must carry (HTTP Basic), else 401."""
    require_header: tuple[str, str] | None = None
    """(name, value) of a header a request must carry (an API token), else 401."""
    redirect_to: str | None = None
    """Answer every request with a redirect (302) to this URL, query kept."""
    endless_known_records: bool = False
    """Every continuation serves the first page's records again, with a new token each time
    (a list that never ends, though every token is new)."""
    no_records_match_at_end: bool = False
    """The last page of a list still carries a token, and the request with it is answered
    noRecordsMatch (instead of an empty resumptionToken on the last page)."""
    older_copy_after: set[str] = field(default_factory=set)
    """Identifiers listed twice on their page: right after the record, an older version of it
    (a day earlier, titled "Older version"), as a provider serving from a lagging replica does."""


@dataclass(frozen=True)
class ServedFormat:
    """A metadata format rendered from each corpus record by the test that serves it."""

    schema: str
    namespace: str
    render: Callable[[CorpusRecord], str]
    """The XML text of the one element inside ``<metadata>`` of a live record."""


@dataclass(frozen=True)
class StreamedFile:
    """A file body of known length sent in chunks (a `file_maker` may return one instead of
    bytes), so that a large file never sits whole in the provider's memory."""

    size: int
    chunks: Callable[[], Iterable[bytes]]
    """A fresh iterator over the body's chunks (their lengths add up to `size`)."""
    etag: str
    """The ETag (quoted), as the bytes' MD5 would be for a file given as bytes."""


class OAIError(Exception):
    """An OAI-PMH protocol error, answered as `<error code="...">` with HTTP 200."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _attr(value: str) -> str:
    return escape(value, _ATTR_ENTITIES)


def _format_seconds(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse_date(value: str) -> tuple[datetime, bool]:
    """Parse an OAI-PMH `from`/`until` value; returns (start of the value, is day granularity)."""
    is_day = bool(_DAY_RE.match(value))
    if not is_day and not _SECONDS_RE.match(value):
        raise OAIError("badArgument", f"Illegal date value {value!r}")
    try:
        if is_day:
            parsed = datetime.strptime(value, "%Y-%m-%d")
        else:
            parsed = datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError as error:
        raise OAIError("badArgument", f"Illegal date value {value!r}") from error
    return parsed.replace(tzinfo=UTC), is_day


def _inject_control_characters(text: str) -> str:
    # Removing the two control characters gives back the original text, so tests can compare.
    return text[:1] + "\x0b" + text[1:] + "\x1a"


def served_document_key(prefix: str) -> str:
    """The key of a corpus record's metadata that holds its document in format `prefix`, as
    a provider recorded it (the record is then served with that document as it is)."""
    return f"{prefix}.xml"


class OAIPMHProvider:
    """An OAI-PMH 2.0 data provider for `corpus` on 127.0.0.1 at a random free port."""

    def __init__(
        self,
        corpus: Corpus,
        *,
        page_size: int = 100,
        granularity: str = "seconds",
        deleted_record: str = "persistent",
        metadata_prefixes: tuple[str, ...] = ("oai_dc",),
        formats: Mapping[str, ServedFormat] | None = None,
        repository_name: str = "Test provider",
        admin_email: str = "admin@example.org",
        path: str = "/oai",
    ) -> None:
        if granularity not in ("seconds", "day"):
            raise ValueError(f"granularity must be 'seconds' or 'day', not {granularity!r}")
        if deleted_record not in ("persistent", "transient", "no"):
            raise ValueError(f"unknown deleted_record mode {deleted_record!r}")
        if page_size < 1:
            raise ValueError("page_size must be positive")
        self.corpus = corpus
        self.page_size = page_size
        self.granularity = granularity
        self.deleted_record = deleted_record
        # `formats`: prefixes served by the test's own renderer (e.g. oai_datacite documents),
        # offered after `metadata_prefixes`.
        self.formats = dict(formats or {})
        self.metadata_prefixes = tuple(dict.fromkeys((*metadata_prefixes, *self.formats)))
        self.repository_name = repository_name
        self.admin_email = admin_email
        self.path = path if path.startswith("/") else "/" + path
        self.quirks = ProviderQuirks()
        self.request_headers: list[dict[str, str]] = []
        """The headers of every request received, in order."""
        self.requests: list[dict[str, str]] = []
        self.files: dict[str, bytes] = {}
        """Files served beside the endpoint, by path (see :meth:`serve_file`)."""
        self.file_redirects: dict[str, str] = {}
        """Paths answered with a redirect to another URL."""
        self.file_drip: dict[str, float] = {}
        """Paths whose bytes trickle out, one a this many seconds (a slow server)."""
        self.file_maker: Callable[[str], bytes | StreamedFile | None] | None = None
        """Makes the bytes of a path not in `files` (None: 404), for corpora of any size; a
        :class:`StreamedFile` for a body sent in chunks."""
        self.file_requests: list[tuple[str, dict[str, str], int]] = []
        """(path, headers, status answered) of every file request received, in order."""

        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._base_url: str | None = None
        # Token expiry: the generation is baked into tokens; an expiry bumps it.
        self._generation = 0
        self._continuations = 0
        self._expiry_setting: int | None = None
        self._nonce = 0
        # Sorted corpus snapshot (keyed on corpus.version) and derived selections.
        self._cache_lock = threading.Lock()
        self._base_version: int | None = None
        self._base_records: list[CorpusRecord] = []
        self._base_stamps: list[int] = []
        self._selections: OrderedDict[tuple[Any, ...], list[CorpusRecord]] = OrderedDict()

    # -- lifecycle -------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        """The OAI-PMH endpoint, e.g. http://127.0.0.1:54321/oai (after `start`)."""
        if self._base_url is None:
            raise RuntimeError("the provider has not been started")
        return self._base_url

    def start(self) -> str:
        """Start serving in a daemon thread; returns the base URL."""
        if self._server is not None:
            return self.base_url
        server = _Server(("127.0.0.1", 0), _Handler)
        server.provider = self
        host, port = server.server_address[:2]
        self._server = server
        self._base_url = f"http://{host}:{port}{self.path}"
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"oai-provider-{port}",
            daemon=True,
        )
        self._thread.start()
        return self._base_url

    def stop(self) -> None:
        """Stop serving and drop open keep-alive connections."""
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        server.close_connections()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> OAIPMHProvider:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def serve_file(self, name: str, content: bytes) -> str:
        """Serve `content` at /files/`name` (with an ETag and Last-Modified, answering
        conditional requests); its URL (after `start`)."""
        path = f"/files/{name}"
        self.files[path] = content
        return self.file_url(name)

    def file_url(self, name: str) -> str:
        split = urlsplit(self.base_url)
        return f"{split.scheme}://{split.netloc}/files/{name}"

    def answer_file(
        self, path: str, headers: Any
    ) -> tuple[int, dict[str, str], bytes | StreamedFile]:
        status, answer, content = self._file_answer(path, headers)
        with self._lock:
            self.file_requests.append((path, dict(headers), status))
        return status, answer, content

    def _file_answer(
        self, path: str, headers: Any
    ) -> tuple[int, dict[str, str], bytes | StreamedFile]:
        if path in self.file_redirects:
            return 302, {"Location": self.file_redirects[path]}, b""
        content: bytes | StreamedFile | None = self.files.get(path)
        if content is None and self.file_maker is not None:
            content = self.file_maker(path)
        if content is None:
            return 404, {"Content-Type": "text/plain"}, b"Not found\n"
        if isinstance(content, StreamedFile):
            etag = content.etag
        else:
            etag = '"' + hashlib.md5(content).hexdigest() + '"'  # noqa: S324 - an ETag
        meta = {"ETag": etag, "Last-Modified": "Mon, 07 Dec 2026 10:00:00 GMT"}
        if headers.get("If-None-Match") == etag:
            return 304, meta, b""
        return 200, {**meta, "Content-Type": "application/octet-stream"}, content

    def note_headers(self, headers: dict[str, str]) -> None:
        with self._lock:
            self.request_headers.append(headers)

    def authorized(self, headers: Any) -> bool:
        """Whether a request carries what the quirks require (Basic credentials, a header)."""
        quirks = self.quirks
        if quirks.require_basic_auth is not None:
            pair = ":".join(quirks.require_basic_auth).encode()
            if headers.get("Authorization") != "Basic " + base64.b64encode(pair).decode():
                return False
        if quirks.require_header is not None:
            name, value = quirks.require_header
            if headers.get(name) != value:
                return False
        return True

    def requests_for(self, verb: str) -> list[dict[str, str]]:
        """The recorded request arguments whose verb is `verb`."""
        with self._lock:
            return [args for args in self.requests if args.get("verb") == verb]

    # -- request handling ------------------------------------------------------------------
    def handle(
        self, pairs: list[tuple[str, str]], accept_gzip: bool
    ) -> tuple[int, dict[str, str], bytes]:
        """Answer one request given its arguments; returns (status, headers, body)."""
        args: dict[str, str] = {}
        for key, value in pairs:
            args.setdefault(key, value)
        with self._lock:
            self.requests.append(args)
        quirks = self.quirks
        if quirks.delay_seconds:
            time.sleep(quirks.delay_seconds)
        with self._lock:
            failing = quirks.fail_requests > 0
            if failing:
                quirks.fail_requests -= 1
        if failing:
            headers = {"Content-Type": "text/plain; charset=utf-8"}
            if quirks.retry_after is not None:
                headers["Retry-After"] = quirks.retry_after
            return quirks.fail_status, headers, b"Temporarily unavailable, try again later.\n"

        if quirks.server_error_for and ("verb", "GetRecord") in pairs:
            if any(
                key == "identifier" and value in quirks.server_error_for for key, value in pairs
            ):
                return 500, {"Content-Type": "text/html"}, b"<h1>Internal Server Error</h1>"
        verb, text, is_error = self._dispatch(pairs)
        if quirks.malformed_xml and verb != "Identify":
            # Identify stays intact so that harvesters get as far as the actual harvest.
            text = text[: len(text) // 2]
        body = text.encode("utf-8")
        headers = {"Content-Type": "text/xml; charset=utf-8"}
        if quirks.gzip and accept_gzip:
            body = gzip.compress(body, compresslevel=1)
            headers["Content-Encoding"] = "gzip"
            headers["Vary"] = "Accept-Encoding"
        return (quirks.error_status if is_error else 200), headers, body

    def _dispatch(self, pairs: list[tuple[str, str]]) -> tuple[str | None, str, bool]:
        verbs = [value for key, value in pairs if key == "verb"]
        verb = verbs[0] if len(verbs) == 1 and verbs[0] in VERBS else None
        args: dict[str, str] = {}
        try:
            if verb is None:
                if not verbs:
                    raise OAIError("badVerb", "The verb argument is missing.")
                if len(verbs) > 1:
                    raise OAIError("badVerb", "The verb argument is repeated.")
                raise OAIError("badVerb", f"Illegal verb {verbs[0]!r}.")
            for key, value in pairs:
                if key == "verb":
                    continue
                if key in args:
                    raise OAIError("badArgument", f"Argument {key!r} is repeated.")
                args[key] = value
            required, optional, exclusive = _VERB_ARGS[verb]
            unknown = set(args) - required - optional - {exclusive}
            if unknown:
                raise OAIError("badArgument", f"Illegal arguments: {', '.join(sorted(unknown))}.")
            if exclusive is not None and exclusive in args:
                if len(args) > 1:
                    raise OAIError("badArgument", f"{exclusive} is an exclusive argument.")
            elif missing := required - set(args):
                raise OAIError("badArgument", f"Missing arguments: {', '.join(sorted(missing))}.")
            for key, value in args.items():
                if not value:
                    raise OAIError("badArgument", f"Argument {key!r} is empty.")
            body = getattr(self, "_" + verb)(args)
        except OAIError as error:
            if error.code in ("badVerb", "badArgument"):
                # The spec forbids echoing arguments of a request that is not valid.
                request = f"<request>{escape(self.base_url)}</request>"
            else:
                request = self._request_element(verb, args)
            body = f'<error code="{error.code}">{escape(error.message)}</error>'
            return verb, self._envelope(request, body), True
        return verb, self._envelope(self._request_element(verb, args), body), False

    def _request_element(self, verb: str | None, args: dict[str, str]) -> str:
        attrs = "".join(
            f' {key}="{_attr(value)}"' for key, value in [("verb", verb or ""), *args.items()]
        )
        return f"<request{attrs}>{escape(self.base_url)}</request>"

    def _envelope(self, request: str, body: str) -> str:
        response_date = _format_seconds(self.corpus.now())
        return (
            f"{_ENVELOPE_START}<responseDate>{response_date}</responseDate>"
            f"{request}{body}</OAI-PMH>\n"
        )

    # -- verbs -----------------------------------------------------------------------------
    def _Identify(self, args: dict[str, str]) -> str:
        earliest = self.corpus.earliest_datestamp()
        if self.granularity == "day":
            earliest_text, granularity = earliest.strftime("%Y-%m-%d"), "YYYY-MM-DD"
        else:
            earliest_text, granularity = _format_seconds(earliest), "YYYY-MM-DDThh:mm:ssZ"
        compression = "<compression>gzip</compression>" if self.quirks.gzip else ""
        return (
            "<Identify>"
            f"<repositoryName>{escape(self.repository_name)}</repositoryName>"
            f"<baseURL>{escape(self.base_url)}</baseURL>"
            "<protocolVersion>2.0</protocolVersion>"
            f"<adminEmail>{escape(self.admin_email)}</adminEmail>"
            f"<earliestDatestamp>{earliest_text}</earliestDatestamp>"
            f"<deletedRecord>{self.deleted_record}</deletedRecord>"
            f"<granularity>{granularity}</granularity>"
            f"{compression}</Identify>"
        )

    def _ListMetadataFormats(self, args: dict[str, str]) -> str:
        if "identifier" in args:
            self._get_record(args["identifier"])
        parts = ["<ListMetadataFormats>"]
        for prefix in self.metadata_prefixes:
            schema, namespace = self._format_info(prefix)
            parts.append(
                f"<metadataFormat><metadataPrefix>{escape(prefix)}</metadataPrefix>"
                f"<schema>{escape(schema)}</schema>"
                f"<metadataNamespace>{escape(namespace)}</metadataNamespace></metadataFormat>"
            )
        parts.append("</ListMetadataFormats>")
        return "".join(parts)

    def _ListSets(self, args: dict[str, str]) -> str:
        sets = list(self.corpus.sets.items())
        if not sets:
            raise OAIError("noSetHierarchy", "This repository does not support sets.")
        continuation = "resumptionToken" in args
        offset = self._decode_token(args["resumptionToken"], "ListSets")["o"] if continuation else 0
        page = sets[offset : offset + self.page_size]
        parts = ["<ListSets>"]
        for spec, name in page:
            parts.append(
                f"<set><setSpec>{escape(spec)}</setSpec><setName>{escape(name)}</setName></set>"
            )
        next_offset = offset + len(page)
        if next_offset < len(sets):
            token = self._encode_token({"v": "ListSets", "o": next_offset})
            parts.append(self._token_element(token, len(sets), offset))
        elif continuation:
            parts.append(self._final_token_element(len(sets), offset))
        parts.append("</ListSets>")
        return "".join(parts)

    def _GetRecord(self, args: dict[str, str]) -> str:
        prefix = args["metadataPrefix"]
        record = self._get_record(args["identifier"])
        if prefix not in self.metadata_prefixes:
            raise OAIError("cannotDisseminateFormat", f"Unsupported metadataPrefix {prefix!r}.")
        return (
            f"<GetRecord>{self._record(record, prefix, self.quirks.control_characters)}</GetRecord>"
        )

    def _ListIdentifiers(self, args: dict[str, str]) -> str:
        return self._list("ListIdentifiers", args)

    def _ListRecords(self, args: dict[str, str]) -> str:
        return self._list("ListRecords", args)

    # -- lists -----------------------------------------------------------------------------
    def _list(self, verb: str, args: dict[str, str]) -> str:
        quirks = self.quirks
        continuation = "resumptionToken" in args
        if continuation:
            state = self._decode_token(args["resumptionToken"], verb)
            if state["p"] not in self.metadata_prefixes:
                raise OAIError(
                    "cannotDisseminateFormat", f"Unsupported metadataPrefix {state['p']!r}."
                )
            if quirks.drop_set_on_resume:
                state["s"] = None
        else:
            state = self._initial_state(verb, args)
        selection = self._selection(state["f"], state["u"], state["s"])
        if not continuation and not selection:
            raise OAIError(
                "noRecordsMatch", "The combination of arguments results in an empty list."
            )
        total = len(selection)
        offset = state["o"]
        if continuation and quirks.no_records_match_at_end and offset >= total:
            raise OAIError("noRecordsMatch", "No more records.")
        if continuation and quirks.endless_known_records:
            offset = 0
            state = {**state, "n": self._next_nonce()}

        if continuation and self._take_empty_page():
            # A distinct token for the same offset, so that no record is lost by the bug.
            token = self._encode_token({**state, "n": self._next_nonce()})
            return f"<{verb}>{self._token_element(token, total, offset)}</{verb}>"

        page = selection[offset : offset + self.page_size]
        next_offset = offset + len(page)
        headers_only = verb == "ListIdentifiers"
        control = quirks.control_characters
        prefix = state["p"]
        parts = [f"<{verb}>"]
        for index, record in enumerate(page, start=offset):
            if headers_only:
                parts.append(self._header(record))
            else:
                parts.append(self._record(record, prefix, control and index % 3 == 0))
            if record.identifier in quirks.older_copy_after:
                older = replace(
                    record,
                    datestamp=record.datestamp - timedelta(days=1),
                    metadata={**record.metadata, "title": ["Older version"]},
                )
                parts.append(
                    self._header(older) if headers_only else self._record(older, prefix, False)
                )
        if quirks.repeat_token:
            if continuation:
                token = args["resumptionToken"]
            else:
                token = self._encode_token(
                    {**state, "o": next_offset if next_offset < total else 0}
                )
            parts.append(self._token_element(token, total, offset))
        elif quirks.endless_known_records:
            token = self._encode_token({**state, "o": 0, "n": self._next_nonce()})
            parts.append(self._token_element(token, total, offset))
        elif (
            next_offset < total
            or (quirks.empty_last_page and page and next_offset == total)
            or (quirks.no_records_match_at_end and next_offset == total)
        ):
            token = self._encode_token({**state, "o": next_offset})
            parts.append(self._token_element(token, total, offset))
        elif continuation:
            parts.append(self._final_token_element(total, offset))
        parts.append(f"</{verb}>")
        return "".join(parts)

    def _initial_state(self, verb: str, args: dict[str, str]) -> dict[str, Any]:
        bounds: dict[str, tuple[datetime, bool]] = {}
        for key in ("from", "until"):
            if key in args:
                value, is_day = _parse_date(args[key])
                if not is_day and self.granularity == "day":
                    raise OAIError("badArgument", f"{key} is finer than the day granularity.")
                bounds[key] = (value, is_day)
        if "from" in bounds and "until" in bounds:
            (from_value, from_day), (until_value, until_day) = bounds["from"], bounds["until"]
            if from_day != until_day:
                raise OAIError("badArgument", "from and until have different granularities.")
            if from_value > until_value:
                raise OAIError("badArgument", "from is later than until.")
        from_ts = until_ts = None
        if "from" in bounds:
            from_ts = int(bounds["from"][0].timestamp())
        if "until" in bounds:
            until_value, until_day = bounds["until"]
            # A day bound covers the whole day: until is inclusive.
            until_ts = int(until_value.timestamp()) + (86399 if until_day else 0)
        prefix = args["metadataPrefix"]
        if prefix not in self.metadata_prefixes:
            raise OAIError("cannotDisseminateFormat", f"Unsupported metadataPrefix {prefix!r}.")
        set_spec = args.get("set")
        if set_spec is not None and not self.corpus.sets:
            raise OAIError("noSetHierarchy", "This repository does not support sets.")
        return {"v": verb, "p": prefix, "s": set_spec, "f": from_ts, "u": until_ts, "o": 0}

    def _selection(
        self, from_ts: int | None, until_ts: int | None, set_spec: str | None
    ) -> list[CorpusRecord]:
        """Records in the window, in (datestamp, identifier) order; cached per corpus version."""
        include_deleted = self.deleted_record != "no"
        with self._cache_lock:
            # Read the version before copying: a change in between only causes a rebuild later.
            version = self.corpus.version
            if version != self._base_version:
                records = self.corpus.select()
                self._base_records = records
                self._base_stamps = [int(record.datestamp.timestamp()) for record in records]
                self._base_version = version
                self._selections.clear()
            key = (from_ts, until_ts, set_spec, include_deleted)
            cached = self._selections.get(key)
            if cached is not None:
                self._selections.move_to_end(key)
                return cached
            stamps = self._base_stamps
            low = bisect.bisect_left(stamps, from_ts) if from_ts is not None else 0
            high = bisect.bisect_right(stamps, until_ts) if until_ts is not None else len(stamps)
            selected = self._base_records[low:high]
            if set_spec is not None:
                child_prefix = set_spec + ":"
                selected = [
                    record
                    for record in selected
                    if any(s == set_spec or s.startswith(child_prefix) for s in record.sets)
                ]
            if not include_deleted:
                selected = [record for record in selected if not record.deleted]
            self._selections[key] = selected
            if len(self._selections) > _SELECTION_CACHE_SIZE:
                self._selections.popitem(last=False)
            return selected

    def _take_empty_page(self) -> bool:
        with self._lock:
            if self.quirks.empty_pages_with_token > 0:
                self.quirks.empty_pages_with_token -= 1
                return True
            return False

    def _next_nonce(self) -> int:
        with self._lock:
            self._nonce += 1
            return self._nonce

    # -- rendering -------------------------------------------------------------------------
    def _get_record(self, identifier: str) -> CorpusRecord:
        record = self.corpus.get(identifier)
        if record is None or (record.deleted and self.deleted_record == "no"):
            raise OAIError("idDoesNotExist", f"No record {identifier!r}.")
        return record

    def _format_info(self, prefix: str) -> tuple[str, str]:
        if prefix == "oai_dc":
            return OAI_DC_SCHEMA, OAI_DC_NS
        if prefix in self.formats:
            return self.formats[prefix].schema, self.formats[prefix].namespace
        if prefix == "lido":
            return LIDO_SCHEMAS["1.1"], LIDO_NS
        name = quote(prefix, safe="")
        return f"http://example.org/schemas/{name}.xsd", f"http://example.org/schemas/{name}/"

    def _datestamp(self, record: CorpusRecord) -> str:
        if record.identifier in self.quirks.bad_datestamp_identifiers:
            return BAD_DATESTAMP
        # isoformat is C-fast; stored datestamps are UTC, so the first 19 chars are the time.
        text = record.datestamp.isoformat()
        if self.granularity == "day":
            return text[:10]
        return text[:19] + ("+00:00" if self.quirks.offset_datestamps else "Z")

    def _header(self, record: CorpusRecord) -> str:
        status = ' status="deleted"' if record.deleted else ""
        sets = "".join(f"<setSpec>{escape(spec)}</setSpec>" for spec in record.sets)
        return (
            f"<header{status}><identifier>{escape(record.identifier)}</identifier>"
            f"<datestamp>{self._datestamp(record)}</datestamp>{sets}</header>"
        )

    def _record(self, record: CorpusRecord, prefix: str, control_characters: bool) -> str:
        header = self._header(record)
        if record.deleted:
            return f"<record>{header}</record>"
        metadata = record.metadata
        parts = ["<record>", header]
        served = metadata.get(served_document_key(prefix))
        if served:
            # A document recorded from a real provider, served as it is.
            parts.append(f"<metadata>{served[0]}</metadata>")
        elif prefix == "oai_dc":
            parts.append(_DC_START)
            for element in DC_ELEMENTS:
                for value in metadata.get(element, ()):
                    if control_characters and element == "title":
                        value = _inject_control_characters(value)
                    parts.append(f"<dc:{element}>{escape(value)}</dc:{element}>")
            parts.append(_DC_END)
        elif prefix in self.formats:
            parts.append(f"<metadata>{self.formats[prefix].render(record)}</metadata>")
        elif prefix == "lido":
            # A museum object of the LIDO corpus as it is; any other record as a LIDO
            # painting titled like it.
            lido = metadata.get("lido") or [
                lido_document(
                    record.identifier.rsplit(":", 1)[-1],
                    title=(metadata.get("title") or [record.identifier])[0],
                )
            ]
            parts.append(f"<metadata>{lido[0]}</metadata>")
        else:
            # Any other format: the same fields as plain elements in a dummy namespace.
            namespace = self._format_info(prefix)[1]
            parts.append(f'<metadata><record xmlns="{_attr(namespace)}">')
            for element in DC_ELEMENTS:
                for value in metadata.get(element, ()):
                    if control_characters and element == "title":
                        value = _inject_control_characters(value)
                    parts.append(f"<{element}>{escape(value)}</{element}>")
            parts.append("</record></metadata>")
        parts.append("</record>")
        return "".join(parts)

    def _token_element(self, token: str, total: int, cursor: int) -> str:
        return (
            f'<resumptionToken completeListSize="{total}" cursor="{cursor}">'
            f"{escape(token)}</resumptionToken>"
        )

    def _final_token_element(self, total: int, cursor: int) -> str:
        if self.quirks.final_token == "absent":
            return ""
        return f'<resumptionToken completeListSize="{total}" cursor="{cursor}"/>'

    # -- tokens ----------------------------------------------------------------------------
    def _encode_token(self, state: dict[str, Any]) -> str:
        with self._lock:
            generation = self._generation
        stamped = {**state, "g": generation}
        if self.quirks.token_lifetime_seconds is not None:
            stamped["t"] = round(time.monotonic(), 3)  # when it was issued
        payload = json.dumps(stamped, separators=(",", ":")).encode()
        if self.quirks.token_style == "unsafe":
            # Standard base64 adds '+', '/' and '=' to the prefix's '%', space, '+', '/' and '='.
            return UNSAFE_TOKEN_PREFIX + base64.b64encode(payload).decode("ascii")
        return base64.urlsafe_b64encode(payload).decode("ascii").rstrip("=")

    def _decode_token(self, token: str, verb: str) -> dict[str, Any]:
        try:
            if token.startswith(UNSAFE_TOKEN_PREFIX):
                payload = base64.b64decode(token[len(UNSAFE_TOKEN_PREFIX) :], validate=True)
            elif _PLAIN_TOKEN_RE.match(token):
                payload = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
            else:
                raise ValueError("not a token of ours")
            state = json.loads(payload)
            if not isinstance(state, dict) or state.get("v") != verb:
                raise ValueError("token of another verb")
            if not isinstance(state.get("o"), int) or state["o"] < 0:
                raise ValueError("bad offset")
            if verb != "ListSets":
                if not isinstance(state.get("p"), str):
                    raise ValueError("bad prefix")
                for key in ("f", "u"):
                    if state.get(key) is not None and not isinstance(state[key], int):
                        raise ValueError("bad bound")
                if state.get("s") is not None and not isinstance(state["s"], str):
                    raise ValueError("bad set")
        except (ValueError, TypeError) as error:
            raise OAIError("badResumptionToken", "The resumption token is invalid.") from error
        with self._lock:
            if state.get("g") != self._generation:
                raise OAIError("badResumptionToken", "The resumption token has expired.")
            lifetime = self.quirks.token_lifetime_seconds
            if lifetime is not None and time.monotonic() - float(state.get("t") or 0) > lifetime:
                raise OAIError("badResumptionToken", "The resumption token has expired.")
            limit = self.quirks.expire_tokens_after
            if limit != self._expiry_setting:
                # A new setting starts a fresh count.
                self._expiry_setting = limit
                self._continuations = 0
            if limit is not None:
                if self._continuations >= limit:
                    self._generation += 1
                    self._continuations = 0
                    raise OAIError("badResumptionToken", "The resumption token has expired.")
                self._continuations += 1
        return {
            "v": verb,
            "p": state.get("p"),
            "s": state.get("s"),
            "f": state.get("f"),
            "u": state.get("u"),
            "o": state["o"],
        }


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    provider: OAIPMHProvider

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(*args, **kwargs)

    def track(self, connection: socket.socket, add: bool) -> None:
        with self._connections_lock:
            if add:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)

    def close_connections(self) -> None:
        # Keep-alive connections would otherwise keep answering after stop().
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that time out or go away are expected in tests; other errors are bugs.
        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes: without TCP_NODELAY every response waits
    # about 40 ms for the client's delayed ACK.
    disable_nagle_algorithm = True
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.server.track(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.track(self.connection, False)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._answer(post=False)

    def do_POST(self) -> None:
        self._answer(post=True)

    def _answer(self, post: bool) -> None:
        provider = self.server.provider
        url = urlsplit(self.path)
        body = b""
        if post:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
        if url.path.startswith("/files/"):
            status, headers, payload = provider.answer_file(url.path, self.headers)
            self._send(status, headers, payload, drip=provider.file_drip.get(url.path))
            return
        if url.path != provider.path:
            self._send(404, {"Content-Type": "text/plain; charset=utf-8"}, b"Not found\n")
            return
        provider.note_headers(dict(self.headers))
        if provider.quirks.redirect_to:
            target = provider.quirks.redirect_to + (f"?{url.query}" if url.query else "")
            self._send(302, {"Location": target}, b"")
            return
        if not provider.authorized(self.headers):
            challenge = {"WWW-Authenticate": 'Basic realm="oai"', "Content-Type": "text/plain"}
            self._send(401, challenge, b"Unauthorized\n")
            return
        if post:
            content_type = self.headers.get("Content-Type", "").split(";")[0].strip().lower()
            form = body.decode("utf-8", "replace")
            query = form if content_type == "application/x-www-form-urlencoded" else ""
        else:
            query = url.query
        pairs = parse_qsl(query, keep_blank_values=True, encoding="utf-8", errors="replace")
        encodings = self.headers.get("Accept-Encoding", "")
        accept_gzip = "gzip" in [
            item.split(";")[0].strip().lower() for item in encodings.split(",")
        ]
        try:
            status, headers, payload = provider.handle(pairs, accept_gzip)
        except Exception:
            message = traceback.format_exc().encode("utf-8", "replace")
            self._send(500, {"Content-Type": "text/plain; charset=utf-8"}, message)
            return
        self._send(status, headers, payload)

    def _send(
        self,
        status: int,
        headers: dict[str, str],
        body: bytes | StreamedFile,
        drip: float | None = None,
    ) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        streamed = isinstance(body, StreamedFile)
        self.send_header("Content-Length", str(body.size if streamed else len(body)))
        self.end_headers()
        if isinstance(body, StreamedFile):
            for chunk in body.chunks():
                self.wfile.write(chunk)
            return
        if not drip:
            self.wfile.write(body)
            return
        for offset in range(len(body)):
            self.wfile.write(body[offset : offset + 1])
            self.wfile.flush()
            time.sleep(drip)


__all__ = [
    "OAIError",
    "OAIPMHProvider",
    "ProviderQuirks",
    "StreamedFile",
    "UNSAFE_TOKEN_PREFIX",
    "BAD_DATESTAMP",
]
