"""Independent OAI-PMH server implementations from PyPI serving a test `Corpus` over HTTP.

Our own test provider (`oarepo_oaipmh_harvester.testing.provider`) was written together with
the harvester, so a harvester that only ever talks to it may share its misunderstandings of the
protocol. The adapters here put the corpus behind two unrelated implementations:

* `PyoaiServer` - the `oaipmh` package (pyoai, 4.x): `oaipmh.server.BatchingServer` over an
  `oaipmh.interfaces.IBatchingOAI` backend. pyoai parses and validates the arguments, converts
  dates, encodes and decodes resumption tokens, writes oai_dc with `oai_dc_writer` and
  serialises the envelope; the backend only selects records.
* `OaiRepoServer` - the `oai-repo` package (0.5.x): `oai_repo.OAIRepository` over an
  `oai_repo.DataInterface`. oai_repo parses and validates the arguments and dates, pages,
  builds its base64 resumption tokens and the envelope; the data interface only selects
  records and builds the `oai_dc:dc` element (oai_repo has no metadata writer of its own).

Neither library ships an HTTP layer, so each adapter hosts the library's request handling in a
`ThreadingHTTPServer` on 127.0.0.1 (random free port, daemon thread). GET query strings and
POST form bodies are collapsed into a `dict` (the only request shape both libraries accept;
a repeated argument therefore keeps its last value instead of being a badArgument).

Repository model shared by both adapters, so that differences come from the libraries only:

* granularity "seconds": a record's datestamp is its corpus datestamp;
  granularity "day": a record's datestamp is the UTC day of its corpus datestamp (the
  repository stores days), and selective harvesting compares those days.
* deleted_record "persistent" / "transient": tombstones are listed with the deleted status;
  "no": tombstones are never listed nor retrievable, as if purged.
* sets come from `corpus.sets`; a record is in a set if it is in the set or in a descendant
  (`phys` contains `phys:astro`), as `Corpus.select` defines.
* Identify reports `corpus.earliest_datestamp()`.

Known quirks
============

Quirks named ``like-this`` break a harvest or the protocol; each has a key in `QUIRKS`, whose
text the tests use as the reason of a strict `xfail` on the affected combinations. The rest
are worked around the way any user of the library must, or are harmless; they are listed so
nobody mistakes them for harvester bugs.

pyoai (`oaipmh` 4.0.0)
----------------------

* ``pyoai-day-granularity`` - no day granularity on output. Every datestamp pyoai writes goes
  through ``oaipmh.datestamp.datetime_to_datestamp(dt)`` without ``day_granularity=True``: the
  header ``<datestamp>`` and Identify ``<earliestDatestamp>`` are always
  ``YYYY-MM-DDThh:mm:ssZ`` (e.g. ``2024-01-03T00:00:00Z``) even when Identify announces
  ``<granularity>YYYY-MM-DD</granularity>``. Input is fine: ``from=YYYY-MM-DD`` becomes
  00:00:00 and ``until=YYYY-MM-DD`` becomes 23:59:59 (``inclusive=True``), so a day-granularity
  harvest returns the right records.
* ``pyoai-finer-granularity`` - ``from``/``until`` are never checked against the repository
  granularity: a day-granularity repository accepts ``from=2024-01-03T05:00:00Z`` and filters
  by it, where the protocol requires badArgument.
* ``pyoai-final-token`` - no final empty resumption token. ``BatchingResumption`` asks the
  backend for ``batch_size + 1`` items and returns ``token=None`` when no more follow;
  ``XMLTreeServer._outputResuming`` then writes no ``<resumptionToken>`` element at all. The
  protocol requires an empty ``<resumptionToken/>`` in the response that completes a list
  started with a token. ``cursor``/``completeListSize`` are never written either.
* Naive datetimes only (worked around, as every pyoai backend must):
  ``datetime_to_datestamp`` does ``assert dt.tzinfo is None``, so a backend returning aware
  datetimes crashes every header with AssertionError (HTTP 500 here, since
  ``XMLTreeServer.handleException`` re-raises anything that is not an ``oaipmh.error``). The
  backend hands pyoai naive UTC datetimes, and pyoai gives it naive UTC ``from_``/``until``.
* ``IBatchingOAI.listSets()`` is declared without arguments but ``BatchingResumption`` calls
  it with ``cursor`` and ``batch_size`` (TypeError otherwise): the backend accepts them.
* ``pyoai-offset-tokens`` - resumption tokens are ``quote(urlencode(kw))`` of the original
  arguments plus ``cursor`` (a plain offset) and ``batch_size``; every page re-runs the query
  and slices ``[cursor:cursor + batch_size + 1]``. Tokens keep ``set``/``from``/``until``
  (``from``/``until`` already expanded to seconds), never expire and never notice changes: a
  record of an already served page that changes during the harvest moves to the end of the
  datestamp order, everything after it shifts left by one, and the record at the page
  boundary - unchanged - is never served. The protocol requires every item unchanged during
  the list sequence to be returned (or the token to be rejected).
* ``oai_dc_writer`` writes ``xsi:schemaLocation="http://purl.org/dc/elements/1.1/
  http://www.openarchives.org/OAI/2.0/oai_dc.xsd"`` (the dc namespace instead of the oai_dc
  namespace). Harmless for parsing; schema validation would not find the oai_dc schema.
* Error responses echo ``<request>`` without any attributes (``_outputErrors`` gets no
  arguments), also for noRecordsMatch/cannotDisseminateFormat where they are required.

oai-repo (`oai_repo` 0.5.2)
---------------------------

* ``oai-repo-tombstones`` - deleted records cannot be served. ``RecordHeader.status`` is
  accepted and validated (``None`` or ``"deleted"``) but ``getrecord.add_header`` never writes
  ``status="deleted"``, and ``getrecord.add_records`` silently skips every record whose
  metadata is ``None`` (what a tombstone has). So with deletedRecord persistent/transient:
  ListRecords drops tombstones (pages get shorter, the harvester never learns of the
  deletion), ListIdentifiers lists them as live headers, and GetRecord of a tombstone returns
  an empty ``<GetRecord/>``. Only deletedRecord "no" is served correctly.
* ``oai-repo-day-until`` - ``until`` in day form is not inclusive in a seconds repository.
  ``OAIRepository.valid_date`` parses ``YYYY-MM-DD`` (always accepted, as the protocol
  requires) to 00:00:00 UTC of that day for both ``from`` and ``until``, and hands the
  ``DataInterface`` only that datetime ("on or before given datetime"). ``until=2024-01-05``
  therefore drops every record from 2024-01-05T00:00:01Z to 23:59:59Z. (In a day-granularity
  repository, whose datestamps are days, midnight-to-midnight comparison is correct.)
* ``oai-repo-mixed-granularity`` - ``from`` and ``until`` of different granularities
  (``from=2024-01-03&until=2024-01-05T12:00:00Z``) are accepted instead of badArgument.
* Identify: ``Identify.earliest_datestamp`` is documented as ``str|datetime``, but
  ``IdentifyValidator._earliest_datestamp_failures`` tests ``isinstance(self.granularity,
  datetime)`` instead of the datestamp and then ``strptime``-s the datetime, so a datetime makes
  every Identify fail with OAIRepoInternalException (HTTP 500). The adapter passes the string
  from oai_repo's own ``helpers.granularity_format``.
* ``Set.description`` defaults to ``None`` but ListSets iterates it (TypeError): the adapter
  passes ``[]``. ListSets never pages (a ``# TODO`` in ``listsets.py``).
* ``helpers.granularity_format`` is a bare ``strftime``: aware non-UTC datetimes would be
  written in their own wall-clock time with a ``Z``. The adapter only hands it UTC.
* Responses are serialised with ``etree.tostring()`` without an encoding, i.e. ASCII with
  non-ASCII text as character references under an ``encoding="UTF-8"`` declaration; valid XML,
  Unicode survives parsing. The envelope elements are un-namespaced lxml elements under a
  default-namespace declaration, which only becomes OAI-namespaced once re-parsed.
* Resumption tokens are base64 of ``metadataPrefix``, ``set``, ``from``, ``until`` (as given),
  cursor, completeListSize and a hash of the ``state`` the data interface returns (here
  ``corpus.version``). Any change to the corpus during a harvest therefore ends it with
  badResumptionToken (correct, but on a busy repository a long harvest may never complete);
  the hash is only checked after the page was built. The final page carries an empty
  ``<resumptionToken cursor=".." completeListSize=".."/>``, as required.
* ``<request>`` never echoes the verb: ``OAIRepository.create_request`` pops ``verb`` from
  the arguments before the request object stores them (``<request metadataPrefix="oai_dc">``).
  Error responses echo no arguments at all.
"""

from __future__ import annotations

import threading
import traceback
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol, Self
from urllib.parse import parse_qsl, urlsplit

from lxml import etree
from oai_repo import (
    NSMAP_OAIDC,
    OAIDC_SCHEMA,
    DataInterface,
    Identify,
    MetadataFormat,
    OAIRepository,
    RecordHeader,
    helpers,
)
from oai_repo import Set as OaiRepoSet
from oaipmh import common, error
from oaipmh.metadata import MetadataRegistry
from oaipmh.server import BatchingServer, oai_dc_writer

from oarepo_oaipmh_harvester.testing.corpus import Corpus, CorpusRecord

__all__ = [
    "GRANULARITIES",
    "QUIRKS",
    "IndependentServer",
    "OaiRepoServer",
    "PyoaiServer",
    "day",
    "end_of_day",
    "seconds",
    "start_independent",
]

GRANULARITIES = {"seconds": "YYYY-MM-DDThh:mm:ssZ", "day": "YYYY-MM-DD"}
DELETED_RECORD_MODES = ("persistent", "transient", "no")

OAI_DC_SCHEMA = "http://www.openarchives.org/OAI/2.0/oai_dc.xsd"
OAI_DC_NS = "http://www.openarchives.org/OAI/2.0/oai_dc/"
DC_NS = "http://purl.org/dc/elements/1.1/"
ADMIN_EMAIL = "admin@example.org"

QUIRKS = {
    "pyoai-day-granularity": (
        "pyoai writes every datestamp (headers, earliestDatestamp) as YYYY-MM-DDThh:mm:ssZ "
        "even when Identify announces day granularity"
    ),
    "pyoai-finer-granularity": (
        "pyoai accepts from/until finer than the repository granularity instead of badArgument"
    ),
    "pyoai-final-token": (
        "pyoai omits the empty resumptionToken element in the response completing a list"
    ),
    "pyoai-offset-tokens": (
        "pyoai tokens are plain offsets into a re-run query: a record changed during a harvest "
        "shifts the rest and an unchanged record is skipped"
    ),
    "oai-repo-tombstones": (
        "oai_repo never writes status=deleted and drops records without metadata, so "
        "tombstones vanish from ListRecords/GetRecord and look live in ListIdentifiers"
    ),
    "oai-repo-day-until": (
        "oai_repo turns until=YYYY-MM-DD into 00:00:00 of that day, so a seconds repository "
        "drops the rest of the until day"
    ),
    "oai-repo-mixed-granularity": (
        "oai_repo accepts from and until of different granularities instead of badArgument"
    ),
}


def day(value: datetime) -> str:
    """`value` as an OAI-PMH day datestamp."""
    return value.astimezone(UTC).strftime("%Y-%m-%d")


def seconds(value: datetime) -> str:
    """`value` as an OAI-PMH seconds datestamp."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def end_of_day(value: datetime) -> datetime:
    """The last second of `value`'s UTC day (the inclusive end of `until=YYYY-MM-DD`)."""
    midnight = value.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return midnight + timedelta(days=1, seconds=-1)


class IndependentServer(Protocol):
    """What the tests need from any hosted independent implementation."""

    base_url: str
    requests: list[dict[str, str]]

    def start(self) -> str: ...

    def stop(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc_info: object) -> None: ...


class _HostedServer:
    """HTTP hosting and the corpus view (granularity, deleted-record mode) shared by adapters."""

    kind = ""

    def __init__(
        self,
        corpus: Corpus,
        *,
        page_size: int = 10,
        granularity: str = "seconds",
        deleted_record: str = "persistent",
    ) -> None:
        if granularity not in GRANULARITIES:
            raise ValueError(f"granularity must be one of {sorted(GRANULARITIES)}")
        if deleted_record not in DELETED_RECORD_MODES:
            raise ValueError(f"deleted_record must be one of {DELETED_RECORD_MODES}")
        if page_size < 1:
            raise ValueError("page_size must be positive")
        self.corpus = corpus
        self.page_size = page_size
        self.granularity = granularity
        self.deleted_record = deleted_record
        self.base_url = ""
        self.requests: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> str:
        """Bind a free port on 127.0.0.1, build the library server and serve in a thread."""
        if self._httpd is not None:
            return self.base_url
        httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        httpd.owner = self
        self.base_url = f"http://127.0.0.1:{httpd.server_address[1]}/oai"
        # The libraries put the base URL into Identify and every <request>, so they can only
        # be built once the port is known.
        self._build()
        self._httpd = httpd
        # A short poll interval keeps stop() fast; the default 0.5 s adds up over many servers.
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"{self.kind}-oai-server",
            daemon=True,
        )
        self._thread.start()
        return self.base_url

    def stop(self) -> None:
        httpd, thread = self._httpd, self._thread
        self._httpd = self._thread = None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- request handling ------------------------------------------------------------------
    def handle_request(self, args: dict[str, str]) -> bytes:
        """Record the arguments and let the library answer them."""
        with self._lock:
            self.requests.append(dict(args))
        return self._respond(dict(args))

    def _build(self) -> None:
        raise NotImplementedError

    def _respond(self, args: dict[str, str]) -> bytes:
        raise NotImplementedError

    # -- the repository's view of the corpus -----------------------------------------------
    @property
    def include_deleted(self) -> bool:
        return self.deleted_record != "no"

    def datestamp(self, record: CorpusRecord) -> datetime:
        """The record's repository datestamp (aware UTC); a day repository stores days."""
        return self._truncate(record.datestamp)

    def earliest_datestamp(self) -> datetime:
        return self._truncate(self.corpus.earliest_datestamp())

    def _truncate(self, value: datetime) -> datetime:
        value = value.astimezone(UTC)
        if self.granularity == "day":
            return value.replace(hour=0, minute=0, second=0, microsecond=0)
        return value

    def select(
        self,
        from_: datetime | None = None,
        until: datetime | None = None,
        set_spec: str | None = None,
    ) -> list[CorpusRecord]:
        """Visible records whose repository datestamp is in [from_, until] (aware UTC)."""
        records = self.corpus.select(set_spec=set_spec, include_deleted=self.include_deleted)
        return [
            record
            for record in records
            if (from_ is None or self.datestamp(record) >= from_)
            and (until is None or self.datestamp(record) <= until)
        ]

    def visible(self, identifier: str) -> CorpusRecord | None:
        record = self.corpus.get(identifier)
        if record is None or (record.deleted and not self.include_deleted):
            return None
        return record


# --------------------------------------------------------------------------------------------
# pyoai
# --------------------------------------------------------------------------------------------


def _naive(value: datetime) -> datetime:
    # pyoai asserts naive datetimes (see "Known quirks"); they mean UTC.
    return value.astimezone(UTC).replace(tzinfo=None)


def _aware(value: datetime | None) -> datetime | None:
    return value.replace(tzinfo=UTC) if value is not None else None


class _PyoaiBackend:
    """An `oaipmh.interfaces.IBatchingOAI` implementation over the adapter's corpus view."""

    def __init__(self, hosted: PyoaiServer) -> None:
        self._hosted = hosted

    def identify(self) -> common.Identify:
        hosted = self._hosted
        return common.Identify(
            repositoryName=f"pyoai over corpus ({hosted.granularity}, {hosted.deleted_record})",
            baseURL=hosted.base_url,
            protocolVersion="2.0",
            adminEmails=[ADMIN_EMAIL],
            earliestDatestamp=_naive(hosted.earliest_datestamp()),
            deletedRecord=hosted.deleted_record,
            granularity=GRANULARITIES[hosted.granularity],
            compression=["identity"],
        )

    def listMetadataFormats(self, identifier: str | None = None) -> list[tuple[str, str, str]]:
        if identifier is not None and self._hosted.visible(identifier) is None:
            raise error.IdDoesNotExistError(f"Unknown identifier: {identifier}")
        return [("oai_dc", OAI_DC_SCHEMA, OAI_DC_NS)]

    def listSets(self, cursor: int = 0, batch_size: int = 10) -> list[tuple[str, str, None]]:
        # BatchingResumption passes cursor/batch_size although IBatchingOAI.listSets() has none.
        sets = [(spec, name, None) for spec, name in self._hosted.corpus.sets.items()]
        if not sets:
            raise error.NoSetHierarchyError("This repository does not support sets.")
        return sets[cursor : cursor + batch_size]

    def getRecord(
        self, metadataPrefix: str, identifier: str
    ) -> tuple[common.Header, common.Metadata | None, None]:
        self._check_prefix(metadataPrefix)
        record = self._hosted.visible(identifier)
        if record is None:
            raise error.IdDoesNotExistError(f"Unknown identifier: {identifier}")
        return self._header(record), self._metadata(record), None

    def listIdentifiers(
        self,
        metadataPrefix: str,
        set: str | None = None,  # pyoai's keyword, shadowing the builtin
        from_: datetime | None = None,
        until: datetime | None = None,
        cursor: int = 0,
        batch_size: int = 10,
    ) -> list[common.Header]:
        records = self._select(metadataPrefix, set, from_, until, cursor, batch_size)
        return [self._header(record) for record in records]

    def listRecords(
        self,
        metadataPrefix: str,
        set: str | None = None,  # pyoai's keyword, shadowing the builtin
        from_: datetime | None = None,
        until: datetime | None = None,
        cursor: int = 0,
        batch_size: int = 10,
    ) -> list[tuple[common.Header, common.Metadata | None, None]]:
        records = self._select(metadataPrefix, set, from_, until, cursor, batch_size)
        return [(self._header(record), self._metadata(record), None) for record in records]

    # -- helpers ---------------------------------------------------------------------------
    @staticmethod
    def _check_prefix(prefix: str) -> None:
        if prefix != "oai_dc":
            raise error.CannotDisseminateFormatError(f"Unknown metadata format: {prefix}")

    def _select(
        self,
        prefix: str,
        set_spec: str | None,
        from_: datetime | None,
        until: datetime | None,
        cursor: int,
        batch_size: int,
    ) -> list[CorpusRecord]:
        self._check_prefix(prefix)
        # pyoai hands over naive UTC datetimes, `until` already expanded to 23:59:59 for days.
        records = self._hosted.select(_aware(from_), _aware(until), set_spec)
        # `cursor` arrives as int (first page) or str (decoded from a token).
        start = int(cursor)
        return records[start : start + int(batch_size)]

    def _header(self, record: CorpusRecord) -> common.Header:
        return common.Header(
            None,
            record.identifier,
            _naive(self._hosted.datestamp(record)),
            list(record.sets),
            record.deleted,
        )

    @staticmethod
    def _metadata(record: CorpusRecord) -> common.Metadata | None:
        if record.deleted:
            return None
        # oai_dc_writer reads getMap(): element name -> list of values, written in its DC order.
        return common.Metadata(
            None, {name: list(values) for name, values in record.metadata.items()}
        )


class PyoaiServer(_HostedServer):
    """pyoai's `BatchingServer` (its validation, tokens and oai_dc writer) over a corpus."""

    kind = "pyoai"

    def _build(self) -> None:
        registry = MetadataRegistry()
        registry.registerWriter("oai_dc", oai_dc_writer)
        self._server = BatchingServer(
            _PyoaiBackend(self),
            metadata_registry=registry,
            resumption_batch_size=self.page_size,
        )

    def _respond(self, args: dict[str, str]) -> bytes:
        # handleRequest turns oaipmh.error exceptions into OAI errors and re-raises the rest.
        return self._server.handleRequest(args)


# --------------------------------------------------------------------------------------------
# oai-repo
# --------------------------------------------------------------------------------------------


class _OaiRepoData(DataInterface):
    """An `oai_repo.DataInterface` over the adapter's corpus view."""

    def __init__(self, hosted: OaiRepoServer) -> None:
        self._hosted = hosted
        # oai_repo pages ListIdentifiers/ListRecords by this attribute.
        self.limit = hosted.page_size

    def get_identify(self) -> Identify:
        hosted = self._hosted
        granularity = GRANULARITIES[hosted.granularity]
        return Identify(
            repository_name=f"oai_repo over corpus ({hosted.granularity}, {hosted.deleted_record})",
            base_url=hosted.base_url,
            admin_email=[ADMIN_EMAIL],
            # A string, not the datetime the docs allow: the validator rejects datetimes.
            earliest_datestamp=helpers.granularity_format(granularity, hosted.earliest_datestamp()),
            deleted_record=hosted.deleted_record,
            granularity=granularity,
            compression=[],
            description=[],
        )

    def is_valid_identifier(self, identifier: str) -> bool:
        return self._hosted.visible(identifier) is not None

    def get_metadata_formats(self, identifier: str | None = None) -> list[MetadataFormat]:
        return [MetadataFormat("oai_dc", OAI_DC_SCHEMA, OAI_DC_NS)]

    def get_record_header(self, identifier: str) -> RecordHeader:
        record = self._record(identifier)
        return RecordHeader(
            identifier=record.identifier,
            # A datetime, so that oai_repo formats it by the Identify granularity.
            datestamp=self._hosted.datestamp(record),
            setspecs=list(record.sets),
            status="deleted" if record.deleted else None,
        )

    def get_record_metadata(self, identifier: str, metadataprefix: str) -> etree._Element | None:
        record = self._record(identifier)
        if record.deleted or metadataprefix != "oai_dc":
            # A tombstone has no metadata; oai_repo documents None for "no metadata".
            return None
        dc = etree.Element(f"{{{OAI_DC_NS}}}dc", nsmap=NSMAP_OAIDC)
        dc.set(*OAIDC_SCHEMA)
        for name, values in record.metadata.items():
            for value in values:
                etree.SubElement(dc, f"{{{DC_NS}}}{name}").text = value
        return dc

    def get_record_abouts(self, identifier: str) -> list[etree._Element]:
        return []

    def list_set_specs(self, identifier: str | None = None, cursor: int = 0) -> tuple:
        if identifier is not None:
            specs = list(self._record(identifier).sets)
        else:
            specs = list(self._hosted.corpus.sets)
        if not self._hosted.corpus.sets:
            return None, None, None
        return specs, len(specs), None

    def get_set(self, setspec: str) -> OaiRepoSet | None:
        name = self._hosted.corpus.sets.get(setspec)
        if name is None:
            return None
        # description must be a list: ListSets iterates it and the default is None.
        return OaiRepoSet(spec=setspec, name=name, description=[])

    def list_identifiers(
        self,
        metadataprefix: str,
        filter_from: datetime | None = None,
        filter_until: datetime | None = None,
        filter_set: str | None = None,
        cursor: int = 0,
    ) -> tuple:
        # oai_repo hands over aware UTC datetimes parsed from the request (or token) strings.
        records = self._hosted.select(filter_from, filter_until, filter_set)
        page = [record.identifier for record in records[cursor : cursor + self.limit]]
        # The corpus version is the state: any change invalidates outstanding tokens.
        return page, len(records), self._hosted.corpus.version

    def _record(self, identifier: str) -> CorpusRecord:
        record = self._hosted.visible(identifier)
        if record is None:
            raise KeyError(identifier)
        return record


class OaiRepoServer(_HostedServer):
    """oai_repo's `OAIRepository` (its validation, paging and tokens) over a corpus."""

    kind = "oai-repo"

    def _build(self) -> None:
        self._repository = OAIRepository(_OaiRepoData(self))

    def _respond(self, args: dict[str, str]) -> bytes:
        # process() turns OAIError into an error response; anything else propagates (HTTP 500).
        return bytes(self._repository.process(args))


SERVER_KINDS: dict[str, type[_HostedServer]] = {"pyoai": PyoaiServer, "oai-repo": OaiRepoServer}


def start_independent(kind: str, corpus: Corpus, **options: Any) -> IndependentServer:
    """Start the `kind` ("pyoai" or "oai-repo") server over `corpus`; stop it when done."""
    try:
        server_class = SERVER_KINDS[kind]
    except KeyError:
        raise ValueError(f"kind must be one of {sorted(SERVER_KINDS)}, not {kind!r}") from None
    server = server_class(corpus, **options)
    server.start()
    return server


# --------------------------------------------------------------------------------------------
# HTTP hosting
# --------------------------------------------------------------------------------------------


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    owner: _HostedServer


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer

    def do_GET(self) -> None:
        self._serve(urlsplit(self.path).query)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self._serve(self.rfile.read(length).decode("utf-8", "replace"))

    def _serve(self, query: str) -> None:
        if urlsplit(self.path).path != "/oai":
            self._send(404, b"not found", "text/plain; charset=utf-8")
            return
        args = dict(parse_qsl(query, keep_blank_values=True))
        try:
            body = self.server.owner.handle_request(args)
        except Exception:
            # A library crash must reach the test as a server error, not as a hang.
            self._send(500, traceback.format_exc().encode(), "text/plain; charset=utf-8")
            return
        self._send(200, body, "text/xml; charset=utf-8")

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        # Keep pytest output clean; `requests` on the adapter records what was asked.
        pass
