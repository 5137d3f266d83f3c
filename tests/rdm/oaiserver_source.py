"""An InvenioRDM instance serving OAI-PMH with invenio-oaiserver, in a process of its own.

The harvester's tests need the real provider of every InvenioRDM and Zenodo, not our imitation
of its habits. Two Invenio applications in one process share too many globals (extension
state, SQLAlchemy listeners, Celery), so the source is a child process: an app booted with
``invenio_app.factory.create_app`` (``/oai2d`` is a UI blueprint), its own PostgreSQL database
and search index prefix, the session's search server, served on 127.0.0.1 on a free port.
The test drives it through a command channel, JSON lines over the child's stdin/stdout, each
command handled in an app context of the child: publish, edit, tombstone, restore, page size,
token lifetime, sets, and the log of the OAI-PMH requests it answered.

Set membership is invenio-oaiserver's own: percolator queries on the session's real
OpenSearch node, maintained by its set signals. Departures from a production InvenioRDM, each
for a reason outside invenio-oaiserver:
- Rate limits (60 requests a minute for guests in invenio-app) are off, as is forced HTTPS.

Run as a script only by :class:`OAIServerSource`; importing this module is cheap.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

SOURCE_ID_PREFIX = "oaiharvest-source"
"""OAISERVER_ID_PREFIX of the source: its OAI identifiers are ``oai:oaiharvest-source:<pid>``."""

RECORD_PID_TYPES = ("recid", "oai", "doi")
"""Persistent identifiers of records (the others are vocabulary entries')."""

STARTUP_TIMEOUT = 180.0
COMMAND_TIMEOUT = 120.0


class SourceError(RuntimeError):
    """A command failed in the source process; the message is the child's."""


def derived_database_uri(suite_uri: str, suffix: str = "_source") -> str:
    """The suite's database URI with `suffix` added to the database name: parallel runs with
    their own suite database never share a source database."""
    parts = urlsplit(suite_uri)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + suffix))


def database_name(uri: str) -> str:
    return urlsplit(uri).path.lstrip("/")


def index_prefix_for(database_uri: str) -> str:
    """A search index prefix of the source's own, named after its database (lowercase, as
    index names must be)."""
    return re.sub(r"[^a-z0-9_-]", "-", database_name(database_uri).lower()) + "-"


# -- parent side ---------------------------------------------------------------------------------
class OAIServerSource:
    """The source process, as the test sees it.

    :meth:`launch` returns at once, so that the source boots while the test app does (two
    cores: about half the wall time); :meth:`wait_ready` waits for it. :meth:`start` does both.
    """

    def __init__(
        self,
        process: subprocess.Popen,
        *,
        database_uri: str,
        search_hosts: Sequence[Mapping[str, Any]],
        index_prefix: str,
        log_path: Path,
        instance_path: Path,
    ) -> None:
        self.process = process
        self.database_uri = database_uri
        self.search_hosts = list(search_hosts)
        self.index_prefix = index_prefix
        self.log_path = log_path
        self.instance_path = instance_path
        self.port: int | None = None
        self.launched = time.monotonic()
        self.startup_seconds = 0.0
        """From launch to the first answer: what a test session pays for the source."""
        self.boot_phases: dict[str, float] = {}
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        self.wait_ready()
        return f"http://127.0.0.1:{self.port}/oai2d"

    @classmethod
    def start(cls, **kwargs: Any) -> OAIServerSource:
        """:meth:`launch`, then :meth:`wait_ready`."""
        source = cls.launch(**kwargs)
        source.wait_ready()
        return source

    @classmethod
    def launch(
        cls,
        *,
        database_uri: str,
        search_hosts: Sequence[Mapping[str, Any]],
        index_prefix: str | None = None,
        page_size: int = 10,
        token_lifetime: int = 60,
    ) -> OAIServerSource:
        """Create the database and start the process that boots the app and serves it."""
        from sqlalchemy_utils import create_database, database_exists, drop_database

        index_prefix = index_prefix or index_prefix_for(database_uri)
        if database_exists(database_uri):
            drop_database(database_uri)  # left over by a run that was killed
        create_database(database_uri)
        settings = {
            "database_uri": database_uri,
            "search_hosts": list(search_hosts),
            "index_prefix": index_prefix,
            "page_size": page_size,
            "token_lifetime": token_lifetime,
            "tests_dir": str(Path(__file__).resolve().parent.parent),
        }
        log = tempfile.NamedTemporaryFile(
            prefix="oaiserver-source-", suffix=".log", delete=False, mode="wb"
        )
        instance = tempfile.mkdtemp(prefix="oaiserver-source-instance-")
        import oarepo_oaipmh_harvester

        # The package the tests import, also where a venv's editable install is another
        # checkout's (the child's sys.path starts at this folder, not at the test's).
        package_root = str(Path(oarepo_oaipmh_harvester.__file__).resolve().parent.parent)
        python_path = [package_root, *filter(None, [os.environ.get("PYTHONPATH")])]
        env = {
            **os.environ,
            # Not the test session's instance folder (pytest-invenio sets these).
            "INVENIO_INSTANCE_PATH": instance,
            "PYTHONPATH": os.pathsep.join(python_path),
            "PYTHONUNBUFFERED": "1",
        }
        env.pop("SQLALCHEMY_DATABASE_URI", None)
        process = subprocess.Popen(
            [sys.executable, __file__, json.dumps(settings)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            env=env,
            text=True,
        )
        log.close()
        return cls(
            process,
            database_uri=database_uri,
            search_hosts=search_hosts,
            index_prefix=index_prefix,
            log_path=Path(log.name),
            instance_path=Path(instance),
        )

    def wait_ready(self, timeout: float = STARTUP_TIMEOUT) -> None:
        """Until the source serves (at once if it already does)."""
        if self.port is not None:
            return
        with self._lock:
            if self.port is None:
                ready = self._read_reply(timeout)
                self.startup_seconds = time.monotonic() - self.launched
                self.boot_phases = ready["phases"]
                self.port = ready["port"]

    # -- the command channel -----------------------------------------------------------------
    def call(self, command: str, timeout: float = COMMAND_TIMEOUT, **arguments: Any) -> Any:
        """Send one command and return its result; SourceError with the child's message."""
        self.wait_ready()
        with self._lock:
            if self.process.poll() is not None:
                raise SourceError(f"The source process has exited.\n{self.log_tail()}")
            self.process.stdin.write(json.dumps({"command": command, **arguments}) + "\n")
            self.process.stdin.flush()
            reply = self._read_reply(timeout)
        if "error" in reply:
            raise SourceError(f"{command}: {reply['error']}")
        return reply["result"]

    def _read_reply(self, timeout: float) -> dict[str, Any]:
        line: list[str] = []

        def read() -> None:
            line.append(self.process.stdout.readline())

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(timeout)
        if reader.is_alive():
            self.process.kill()  # hung: later calls must fail at once, not read its answer
            raise SourceError(f"No answer from the source in {timeout:g} s.\n{self.log_tail()}")
        if not line[0]:
            raise SourceError(f"The source process has exited.\n{self.log_tail()}")
        return json.loads(line[0])

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return "(no log)"
        return "\n".join(text[-lines:])

    # -- what the tests do at the source ------------------------------------------------------
    def publish(
        self, data: Mapping[str, Any], files: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """Create and publish a record (with `files`, key -> text, uploaded); returns ``id``,
        ``oai``, ``updated``, ``record``."""
        return self.call("publish", data=dict(data), files=dict(files or {}))

    def new_version(self, pid: str, files: Mapping[str, str]) -> dict[str, Any]:
        """A new version of `pid`, its files carried over and `files` (key -> text) put in."""
        return self.call("new_version", pid=pid, files=dict(files))

    def edit(self, pid: str, metadata: Mapping[str, Any]) -> dict[str, Any]:
        """A new revision: edit, the metadata keys in `metadata` replaced, publish."""
        return self.call("edit", pid=pid, metadata=dict(metadata))

    def delete(self, pid: str) -> dict[str, Any]:
        """Tombstone the record (``delete_record``)."""
        return self.call("delete", pid=pid)

    def restore(self, pid: str) -> dict[str, Any]:
        return self.call("restore", pid=pid)

    def configure(self, *, page_size: int | None = None, token_lifetime: int | None = None) -> None:
        """OAISERVER_PAGE_SIZE and the token lifetime (seconds) from the next request on."""
        self.call("configure", page_size=page_size, token_lifetime=token_lifetime)

    def create_set(self, spec: str, name: str, search_pattern: str) -> None:
        self.call("create_set", spec=spec, name=name, search_pattern=search_pattern)

    def reset(self, *, page_size: int = 10, token_lifetime: int = 60) -> None:
        """No records, sets, held-back answers or logged requests, and the default page size
        and token lifetime, for the next test: the records' tables are emptied and their
        indices made anew (vocabularies stay)."""
        self.call("reset", page_size=page_size, token_lifetime=token_lifetime)

    def hold_back_second_pages(self, seconds: float, lists: int = 1) -> None:
        """In the next `lists` lists, the first continuation (page 2, asked for with the token
        of page 1) is answered `seconds` late, after the server has done its work: a slow page,
        or a proxy that waits for it. Its retries are answered at once."""
        self.call("hold_back", seconds=seconds, lists=lists)

    def drop_scrolls(self) -> None:
        """The search server forgets every scroll (a restart of the cluster does this): tokens
        stay valid for their lifetime, but what they point at is gone."""
        self.call("drop_scrolls")

    def requests(self) -> list[dict[str, Any]]:
        """The OAI-PMH requests answered since the last reset: ``args``, ``status``,
        ``errors`` (OAI error codes), ``exception`` (the class of an unhandled one)."""
        return self.call("requests")

    # -- the end -------------------------------------------------------------------------------
    def stop(self) -> None:
        """End the process (its indices go with it), then drop its database."""
        from sqlalchemy_utils import database_exists, drop_database

        if self.process.poll() is None:
            try:
                self.process.stdin.write(json.dumps({"command": "stop"}) + "\n")
                self.process.stdin.flush()
                self.process.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream and not stream.closed:
                stream.close()
        if self.process.returncode != 0:
            self._delete_indices()  # the child could not do it
        if database_exists(self.database_uri):
            drop_database(self.database_uri)
        shutil.rmtree(self.instance_path, ignore_errors=True)
        if self.process.returncode == 0:
            self.log_path.unlink(missing_ok=True)  # kept only when the process failed

    def _delete_indices(self) -> None:
        import requests

        for host in self.search_hosts:
            url = f"http://{host['host']}:{host['port']}/{self.index_prefix}*"
            try:
                requests.delete(url, timeout=10)
            except requests.RequestException:
                pass  # a search server that is gone took the indices with it


# -- child side ----------------------------------------------------------------------------------
def _references(value: Any) -> Any:
    """Vocabulary entries as the draft API returns them (id, title, props, icon...) reduced to
    the ``{"id": ...}`` it accepts back."""
    if isinstance(value, list):
        return [_references(item) for item in value]
    if isinstance(value, dict):
        if "id" in value and "title" in value:
            return {"id": value["id"]}
        return {key: _references(item) for key, item in value.items()}
    return value


def source_config(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The source app's configuration: RDM's own where it publishes, invenio-app-rdm's OAI
    server settings (given here, for an app without invenio-app-rdm), and the test departures."""
    from invenio_rdm_records.proxies import current_rdm_records_service
    from oaiharvest_test_support.rdm import rdm_config
    from werkzeug.local import LocalProxy

    config = rdm_config(external_dois=True)
    config.update(
        {
            "SQLALCHEMY_DATABASE_URI": settings["database_uri"],
            "SQLALCHEMY_TRACK_MODIFICATIONS": False,
            "SEARCH_HOSTS": settings["search_hosts"],
            "SEARCH_INDEX_PREFIX": settings["index_prefix"],
            "SECRET_KEY": "oaiserver-source-secret",
            "SECURITY_PASSWORD_SALT": "oaiserver-source-salt",
            "TESTING": False,  # a real server: errors become HTTP 500 answers
            "APP_DEFAULT_SECURE_HEADERS": {
                "force_https": False,
                "content_security_policy": {"default-src": []},
            },
            "TRUSTED_HOSTS": ["127.0.0.1", "localhost"],
            "RATELIMIT_ENABLED": False,
            "CELERY_TASK_ALWAYS_EAGER": True,
            "CELERY_TASK_EAGER_PROPAGATES": True,
            "CELERY_BROKER_URL": "memory://",
            "BROKER_URL": "memory://",
            "CACHE_TYPE": "SimpleCache",
            "RECORDS_REFRESOLVER_CLS": "invenio_records.resolver.InvenioRefResolver",
            "RECORDS_REFRESOLVER_STORE": "invenio_jsonschemas.proxies.current_refresolver_store",
            "MAIL_SUPPRESS_SEND": True,
            "WTF_CSRF_ENABLED": False,
            "DEBUG_TB_ENABLED": False,
            "THEME_SITENAME": "oaiserver source",
            # Its own address: the MARCXML serializer's file links (8564 $u) must reach it.
            "SITE_UI_URL": settings["ui_url"],
            "SITE_API_URL": settings["ui_url"] + "/api",
            # invenio-app-rdm's OAI server configuration
            "OAISERVER_REPOSITORY_NAME": "InvenioRDM source of the harvester tests",
            "OAISERVER_ID_PREFIX": SOURCE_ID_PREFIX,
            # The records index by its full name, as invenio-app-rdm gives it: the percolator
            # index of the sets is made from that index's mapping.
            "OAISERVER_RECORD_INDEX": LocalProxy(
                lambda: current_rdm_records_service.record_cls.index._name
            ),
            "OAISERVER_SEARCH_CLS": "invenio_rdm_records.oai:OAIRecordSearch",
            "OAISERVER_ID_FETCHER": "invenio_rdm_records.oai:oaiid_fetcher",
            "OAISERVER_GETRECORD_FETCHER": "invenio_rdm_records.oai:getrecord_fetcher",
            "OAISERVER_LAST_UPDATE_KEY": "updated",
            "OAISERVER_CREATED_KEY": "created",
            "OAISERVER_RECORD_CLS": "invenio_rdm_records.records.api:RDMRecord",
            "OAISERVER_METADATA_FORMATS": {
                "oai_dc": {
                    "serializer": "invenio_rdm_records.oai:dublincore_etree",
                    "schema": "http://www.openarchives.org/OAI/2.0/oai_dc.xsd",
                    "namespace": "http://www.openarchives.org/OAI/2.0/oai_dc/",
                },
                "oai_datacite": {
                    "serializer": "invenio_rdm_records.oai:oai_datacite_etree",
                    "schema": "http://schema.datacite.org/oai/oai-1.1/oai.xsd",
                    "namespace": "http://schema.datacite.org/oai/oai-1.1/",
                },
                "datacite": {
                    "serializer": "invenio_rdm_records.oai:datacite_etree",
                    "schema": "http://schema.datacite.org/meta/kernel-4.5/metadata.xsd",
                    "namespace": "http://datacite.org/schema/kernel-4",
                },
                "marcxml": {
                    "serializer": "invenio_rdm_records.oai:marcxml_etree",
                    "schema": "https://www.loc.gov/standards/marcxml/schema/MARC21slim.xsd",
                    "namespace": "https://www.loc.gov/standards/marcxml/",
                },
            },
            "OAISERVER_PAGE_SIZE": settings["page_size"],
            "OAISERVER_RESUMPTION_TOKEN_EXPIRE_TIME": settings["token_lifetime"],
        }
    )
    return config


class _Exchanges:
    """WSGI middleware that logs every OAI-PMH exchange and can hold one answer back.

    Outside Flask because an answer can be werkzeug's own: when the view raises, the theme's
    500 page needs built assets, fails, and werkzeug answers a plain 500 (production sends
    the theme's page; the status is the same). What the tests look at: the arguments, the
    status, the OAI error codes, the number of items, whether a resumptionToken element came
    and its text, and the class of an exception that made the answer a 500.
    """

    def __init__(self, wsgi_app: Any) -> None:
        self.wsgi_app = wsgi_app
        self.log: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.local = threading.local()
        # Page 2 of the next `lists_held_back` lists comes `hold_back_seconds` late.
        self.hold_back_seconds = 0.0
        self.lists_held_back = 0
        self.armed = False

    def note_exception(self, sender: Any, exception: BaseException, **extra: Any) -> None:
        self.local.exception = type(exception).__name__

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        if not environ.get("PATH_INFO", "").endswith("/oai2d"):
            return self.wsgi_app(environ, start_response)
        self.local.exception = None
        args = dict(parse_qsl(environ.get("QUERY_STRING", ""), keep_blank_values=True))
        status: list[int] = []

        def capture(line: str, headers: Any, exc_info: Any = None) -> Any:
            status.append(int(line.split()[0]))
            return start_response(line, headers, exc_info)

        try:
            body = b"".join(self.wsgi_app(environ, capture))
        except Exception:
            self._note(args, 500, "")
            raise
        self._note(args, status[0], body.decode("utf-8", "replace"))
        delay = 0.0
        with self.lock:
            if "resumptionToken" not in args:
                self.armed = self.lists_held_back > 0
            elif self.armed:
                self.armed = False
                self.lists_held_back -= 1
                delay = self.hold_back_seconds
        if delay:
            # The view has run (invenio-oaiserver's scroll has moved on); the answer is late.
            time.sleep(delay)
        return [body]

    def _note(self, args: dict[str, str], status: int, body: str) -> None:
        token = re.search(r"<resumptionToken[^>]*?(?:/>|>([^<]*)</resumptionToken>)", body)
        with self.lock:
            self.log.append(
                {
                    "args": args,
                    "status": status,
                    "errors": re.findall(r'<error code="(\w+)"', body),
                    "items": len(re.findall(r"<header[ >]", body)),
                    "token_element": token is not None,
                    "token": (token.group(1) or None) if token else None,
                    "exception": self.local.exception,
                }
            )


class _Source:
    """The child: the app, its HTTP server, and the commands."""

    def __init__(self, settings: Mapping[str, Any]) -> None:
        self.settings = settings
        self.phases: dict[str, float] = {}
        self.app = self._boot()

    def _boot(self) -> Any:
        from flask import got_request_exception
        from invenio_app.factory import create_app
        from invenio_db import db
        from oaiharvest_test_support.rdm import (
            app_rdm_installed,
            create_default_location,
            create_records_ui_blueprint,
            load_vocabularies,
        )

        phase = time.monotonic()
        app = create_app(**source_config(self.settings))
        self.phases["create_app"] = time.monotonic() - phase
        # pytest-invenio registers these through entry points; here they are added directly
        # (invenio-app-rdm, where installed, has registered its real ones).
        if not app_rdm_installed():
            app.register_blueprint(create_records_ui_blueprint(app))

        self.exchanges = _Exchanges(app.wsgi_app)
        app.wsgi_app = self.exchanges
        got_request_exception.connect(self.exchanges.note_exception, app, weak=False)

        with app.app_context():
            phase = time.monotonic()
            db.create_all()
            self._fresh_indices(all_indices=True)
            self.phases["tables_and_indices"] = time.monotonic() - phase
            phase = time.monotonic()
            # The entries the target has too: a value the target lacks would be a loss of the
            # test set-up, not of the round trip.
            load_vocabularies()
            create_default_location()
            self.phases["vocabularies"] = time.monotonic() - phase
        return app

    def _fresh_indices(self, *, all_indices: bool = False) -> None:
        from invenio_rdm_records.records.api import RDMDraft, RDMRecord
        from invenio_search import current_search

        names = None if all_indices else [RDMRecord.index._name, RDMDraft.index._name]
        list(current_search.delete(index_list=names, ignore=[404]))
        list(current_search.create(index_list=names, ignore_existing=True))

    # -- commands --------------------------------------------------------------------------
    def handle(self, command: str, arguments: dict[str, Any]) -> Any:
        from invenio_db import db

        with self.app.test_request_context():
            try:
                return getattr(self, f"do_{command}")(**arguments)
            finally:
                db.session.remove()

    def _refresh(self) -> None:
        from invenio_rdm_records.records.api import RDMRecord
        from invenio_search import current_search

        current_search.flush_and_refresh(RDMRecord.index._name)

    def _summary(self, item: Any) -> dict[str, Any]:
        data = item.to_dict()
        return {
            "id": data["id"],
            "oai": data.get("pids", {}).get("oai", {}).get("identifier"),
            "updated": data["updated"],
            "revision_id": data["revision_id"],
            "record": data,
        }

    def do_publish(
        self, data: dict[str, Any], files: dict[str, str] | None = None
    ) -> dict[str, Any]:
        from invenio_access.permissions import system_identity
        from invenio_rdm_records.proxies import current_rdm_records_service as service

        if files:
            data = {**data, "files": {"enabled": True}}
        draft = service.create(system_identity, data)
        if draft.errors:
            service.delete_draft(system_identity, draft.id)
            raise ValueError(f"draft errors: {draft.errors}")
        self._put_files(draft.id, files or {})
        record = service.publish(system_identity, draft.id)
        self._refresh()
        return self._summary(record)

    def _put_files(self, draft_id: str, files: dict[str, str]) -> None:
        """Upload `files` (key -> text) into a draft, as a depositor does."""
        import io

        from invenio_access.permissions import system_identity
        from invenio_rdm_records.proxies import current_rdm_records_service as service

        if not files:
            return
        service.draft_files.init_files(system_identity, draft_id, [{"key": k} for k in files])
        for key, text in files.items():
            content = text.encode("utf-8")
            service.draft_files.set_file_content(
                system_identity, draft_id, key, io.BytesIO(content), len(content)
            )
            service.draft_files.commit_file(system_identity, draft_id, key)

    def do_new_version(self, pid: str, files: dict[str, str]) -> dict[str, Any]:
        """A new version of `pid` with its files imported, `files` (key -> text) put in
        (replacing those of the same key), published."""
        from invenio_access.permissions import system_identity
        from invenio_rdm_records.proxies import current_rdm_records_service as service

        draft = service.new_version(system_identity, pid)
        service.import_files(system_identity, draft.id)
        listing = service.draft_files.list_files(system_identity, draft.id).to_dict()
        for entry in listing.get("entries") or ():
            if entry["key"] in files:
                service.draft_files.delete_file(system_identity, draft.id, entry["key"])
        self._put_files(draft.id, files)
        # RDM leaves a new version's publication date empty: the depositor gives it again.
        data = service.read_draft(system_identity, draft.id).to_dict()
        published = service.read(system_identity, pid).to_dict()["metadata"]["publication_date"]
        data["metadata"]["publication_date"] = published
        service.update_draft(system_identity, draft.id, data)
        record = service.publish(system_identity, draft.id)
        self._refresh()
        return self._summary(record)

    def do_edit(self, pid: str, metadata: dict[str, Any]) -> dict[str, Any]:
        from invenio_access.permissions import system_identity
        from invenio_rdm_records.proxies import current_rdm_records_service as service

        draft = service.edit(system_identity, pid).to_dict()
        draft["metadata"] = _references({**draft["metadata"], **metadata})
        updated = service.update_draft(system_identity, pid, draft)
        if updated.errors:
            raise ValueError(f"draft errors: {updated.errors}")
        record = service.publish(system_identity, pid)
        self._refresh()
        return self._summary(record)

    def do_delete(self, pid: str) -> dict[str, Any]:
        from invenio_access.permissions import system_identity
        from invenio_rdm_records.proxies import current_rdm_records_service as service

        service.delete_record(system_identity, pid, {"note": "tombstoned by the test"})
        self._refresh()
        return {"id": pid}

    def do_restore(self, pid: str) -> dict[str, Any]:
        from invenio_access.permissions import system_identity
        from invenio_rdm_records.proxies import current_rdm_records_service as service

        record = service.restore_record(system_identity, pid)
        self._refresh()
        return self._summary(record)

    def do_configure(self, page_size: int | None, token_lifetime: int | None) -> None:
        if page_size is not None:
            self.app.config["OAISERVER_PAGE_SIZE"] = page_size
        if token_lifetime is not None:
            self.app.config["OAISERVER_RESUMPTION_TOKEN_EXPIRE_TIME"] = token_lifetime

    def do_create_set(self, spec: str, name: str, search_pattern: str) -> None:
        from invenio_db import db
        from invenio_oaiserver.models import OAISet
        from invenio_search.proxies import current_search_client

        db.session.add(OAISet(spec=spec, name=name, search_pattern=search_pattern))
        db.session.commit()
        # The set's percolator query is indexed on commit but searchable only after a refresh:
        # a header served before it would name no set (seen once, 2026-12-04).
        current_search_client.indices.refresh(
            index=f"{self.settings['index_prefix']}*-percolators", ignore_unavailable=True
        )

    def do_reset(self, page_size: int, token_lifetime: int) -> None:
        import sqlalchemy as sa
        from invenio_db import db
        from invenio_oaiserver.models import OAISet
        from invenio_pidstore.models import PersistentIdentifier
        from invenio_search.proxies import current_search_client

        # Records, drafts, parents, their versions and buckets go; vocabularies and the
        # files location stay (loading them again would cost seconds).
        tables = sorted(
            name
            for name in db.metadata.tables
            if name.startswith(("rdm_", "files_")) and name != "files_location"
        )
        db.session.execute(sa.text(f"TRUNCATE {', '.join(tables)}, pidstore_redirect CASCADE"))
        db.session.execute(
            sa.delete(PersistentIdentifier).where(
                PersistentIdentifier.pid_type.in_(RECORD_PID_TYPES)
            )
        )
        OAISet.query.delete()
        db.session.commit()
        self._fresh_indices()
        # The bulk delete above skips the set signals that would remove each set's percolator
        # query; invenio-oaiserver makes the dedicated index again when a set is created.
        current_search_client.indices.delete(
            index=f"{self.settings['index_prefix']}*-percolators", ignore_unavailable=True
        )
        self.do_configure(page_size, token_lifetime)
        with self.exchanges.lock:
            self.exchanges.log.clear()
            self.exchanges.lists_held_back = 0
            self.exchanges.armed = False

    def do_drop_scrolls(self) -> None:
        from invenio_search.proxies import current_search_client

        current_search_client.clear_scroll(scroll_id="_all")

    def do_requests(self) -> list[dict[str, Any]]:
        with self.exchanges.lock:
            return list(self.exchanges.log)

    def do_hold_back(self, seconds: float, lists: int) -> None:
        with self.exchanges.lock:
            self.exchanges.hold_back_seconds = seconds
            self.exchanges.lists_held_back = lists

    def do_stop(self) -> None:
        from invenio_search import current_search

        list(current_search.delete(ignore=[404]))


def _serve(settings: dict[str, Any]) -> None:
    from werkzeug.serving import make_server

    # The channel is the process's original stdout; whatever else prints goes to the log.
    channel = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def reply(message: dict[str, Any]) -> None:
        channel.write(json.dumps(message, default=str) + "\n")

    # The server (its port) first: the app's links name its address.
    booted: list[Any] = []
    server = make_server(
        "127.0.0.1", 0, lambda environ, respond: booted[0].app(environ, respond), threaded=True
    )
    source = _Source({**settings, "ui_url": f"http://127.0.0.1:{server.server_port}"})
    booted.append(source)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    reply(
        {
            "port": server.server_port,
            "phases": source.phases,
        }
    )
    for line in sys.stdin:
        message = json.loads(line)
        command = message.pop("command")
        try:
            result = source.handle(command, message)
        except Exception as error:  # noqa: BLE001 - the test gets it as SourceError
            import traceback

            traceback.print_exc()
            reply({"error": f"{type(error).__name__}: {error}"})
        else:
            reply({"result": result})
        if command == "stop":
            break
    with source.app.app_context():
        from invenio_db import db

        db.engine.dispose()  # the parent drops the database next
    channel.close()
    # Interpreter shutdown of a whole Invenio takes seconds and has nothing left to do.
    os._exit(0)


if __name__ == "__main__":
    _settings = json.loads(sys.argv[1])
    sys.path.insert(0, _settings["tests_dir"])
    _serve(_settings)
