"""A served Invenio instance with built assets: the admin panel as an administrator meets it.

    python -m oaiharvest_test_support.panel [--port 5000]      (./run.sh panel)

Builds the webpack assets once (``invenio collect``, ``invenio webpack buildall``; about three
minutes the first time), starts the bundled OAI-PMH provider, osmem-server, the application on
127.0.0.1, a Celery worker and the invenio-jobs scheduler (celery beat), creates an
administrator and a demo harvester, and prints the URL and the login. Ctrl-C stops everything
it started. The end-to-end browser test (tests/browser) serves the panel with the same code.
It is one module because every step (build, processes, accounts) is one linear script that
the test and the command share.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import oarepo_oaipmh_harvester

from .workers import invenio_environment

ADMIN_EMAIL = "admin@example.org"
ADMIN_PASSWORD = "harvest-admin"
# tests/support/oaiharvest_test_support/panel.py: the checkout is three folders up.
PROJECT_ROOT = Path(__file__).resolve().parents[3]
DEFAULT_INSTANCE = PROJECT_ROOT / ".panel-instance"


def _print(message: str = "") -> None:
    print(message, flush=True)


def npm_overrides_from_environment() -> dict[str, str]:
    """``OAI_HARVESTER_NPM_OVERRIDES``, e.g. ``{"warcio": "2.4.11"}``: with invenio-app-rdm
    installed, invenio-previewer's replaywebpage asks (through @webrecorder/wabac) for a
    warcio release that not every npm registry serves."""
    return json.loads(os.environ.get("OAI_HARVESTER_NPM_OVERRIDES") or "{}")


@dataclass
class PanelSettings:
    """Where the served instance keeps its data and how its processes find each other."""

    instance_path: Path
    database_uri: str
    search_hosts: list[dict[str, Any]]
    broker_url: str = "redis://127.0.0.1:6379/5"
    port: int = 5000
    index_prefix: str = "oaiharvest-panel-"
    osmem: bool = False
    """The search server is osmem-server, which has no data streams for invenio-jobs' logs."""
    queue: str = "oai-harvest-panel"
    extra_config: dict[str, Any] = field(default_factory=dict)
    npm_overrides: dict[str, str] = field(default_factory=npm_overrides_from_environment)
    """npm ``overrides`` for the instance's package.json (``OAI_HARVESTER_NPM_OVERRIDES``, JSON):
    for a registry that lacks a version some bundle's dependency asks for."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def config(self) -> dict[str, Any]:
        """The instance configuration, passed to every process as INVENIO_* variables."""
        return {
            "SQLALCHEMY_DATABASE_URI": self.database_uri,
            "SEARCH_HOSTS": self.search_hosts,
            "SEARCH_INDEX_PREFIX": self.index_prefix,
            "SECRET_KEY": "panel-not-secret",
            "APP_THEME": ["semantic-ui"],
            "SITE_UI_URL": self.url,
            "SITE_API_URL": f"{self.url}/api",
            "APP_ALLOWED_HOSTS": ["127.0.0.1", "localhost"],
            # Plain HTTP on loopback: no HTTPS redirect, cookies not marked secure.
            "APP_DEFAULT_SECURE_HEADERS": {"force_https": False, "content_security_policy": {}},
            "SESSION_COOKIE_SECURE": False,
            "REMEMBER_COOKIE_SECURE": False,
            "ACCOUNTS_SESSION_REDIS_URL": self.broker_url,
            "CACHE_TYPE": "RedisCache",
            "CACHE_REDIS_URL": self.broker_url,
            "ACCESS_SESSION_CACHE_REDIS_URL": self.broker_url,
            "CELERY_BROKER_URL": self.broker_url,
            "BROKER_URL": self.broker_url,
            "CELERY_RESULT_BACKEND": self.broker_url,
            "CELERY_TASK_ALWAYS_EAGER": False,
            "JOBS_DEFAULT_QUEUE": self.queue,
            "JOBS_QUEUES": {
                self.queue: {"name": self.queue, "title": "Harvests", "description": "Harvests"}
            },
            "OAI_HARVESTER_WRITE_QUEUE": self.queue,
            "OAI_HARVESTER_SAMPLE_TARGET": True,
            "OAI_HARVESTER_ALLOW_PRIVATE_NETWORKS": True,  # the bundled provider is local
            # Job logs go to a data stream, which osmem lacks (a plain index stands in).
            "JOBS_LOGGING": not self.osmem,
            "RECORDS_REFRESOLVER_CLS": "invenio_records.resolver.InvenioRefResolver",
            "RECORDS_REFRESOLVER_STORE": "invenio_jsonschemas.proxies.current_refresolver_store",
            "MAIL_SUPPRESS_SEND": True,
            "THEME_SITENAME": "Harvest panel",
            "THEME_FRONTPAGE": True,
            "SECURITY_POST_LOGIN_VIEW": "/administration/oai-harvesters",
            "ACCOUNTS_LOCAL_LOGIN_ENABLED": True,
            "SECURITY_CONFIRMABLE": False,
            "LOGGING_CONSOLE_LEVEL": "WARNING",
            # The browser test polls the API while runs go on.
            "RATELIMIT_AUTHENTICATED_USER": "20000 per hour;1000 per minute",
            # Where installed, invenio-app-rdm (rate limits) and invenio-communities (identity
            # cache) default to Redis databases of their own: keep to invenio-app's default
            # and to the panel's database.
            "RATELIMIT_STORAGE_URI": "memory://",
            "COMMUNITIES_IDENTITIES_CACHE_REDIS_URL": self.broker_url,
            **self.extra_config,
        }

    def environment(self) -> dict[str, str]:
        env = invenio_environment(self.config())
        env["INVENIO_INSTANCE_PATH"] = str(self.instance_path)
        env["FLASK_DEBUG"] = "0"
        return env


def _assets_digest(npm_overrides: dict[str, str] | None = None) -> str:
    """What the built assets depend on: the installed packages that declare webpack bundles,
    this package's own asset files (they change without a new version in development) and
    the npm overrides."""
    digest = hashlib.sha256()
    if npm_overrides:
        digest.update(json.dumps(npm_overrides, sort_keys=True).encode())
    for name in sorted(
        f"{dist.metadata['Name']}=={dist.version}"
        for dist in metadata.distributions()
        if any(ep.group == "invenio_assets.webpack" for ep in dist.entry_points)
    ):
        digest.update(name.encode() + b"\n")
    own_assets = Path(oarepo_oaipmh_harvester.__file__).resolve().parent / "assets"
    for path in sorted(own_assets.rglob("*")):
        if path.is_file():
            digest.update(str(path.relative_to(own_assets)).encode() + path.read_bytes())
    return digest.hexdigest()


def assets_built(instance_path: Path, npm_overrides: dict[str, str] | None = None) -> bool:
    stamp = instance_path / "assets-built-from"
    manifest = instance_path / "static" / "dist" / "manifest.json"
    return (
        manifest.exists() and stamp.exists() and stamp.read_text() == _assets_digest(npm_overrides)
    )


def build_assets(settings: PanelSettings, *, log: Path | None = None) -> None:
    """``invenio collect`` and ``invenio webpack buildall``, once per set of installed bundles
    (and npm overrides)."""
    instance = settings.instance_path
    overrides = settings.npm_overrides
    if assets_built(instance, overrides):
        return
    instance.mkdir(parents=True, exist_ok=True)
    _remove_collected_sources(instance / "assets")
    env = settings.environment()
    invenio = str(Path(sys.executable).with_name("invenio"))
    log = log or instance / "assets-build.log"
    _print(f"Building the panel's assets once (about 3 minutes; log: {log}) ...")
    started = time.monotonic()
    # Taken before building: a bundle edited while the build runs makes the next run build again.
    digest = _assets_digest(overrides)
    # buildall is create, install, build; the overrides go into package.json in between.
    steps = [["collect", "-v"], ["webpack", "create"], ["webpack", "install"], ["webpack", "build"]]
    with log.open("w") as output:
        for step in steps:
            if step == ["webpack", "install"] and overrides:
                _add_npm_overrides(instance / "assets" / "package.json", overrides)
            completed = subprocess.run(
                [invenio, *step], env=env, stdout=output, stderr=subprocess.STDOUT
            )
            if completed.returncode != 0:
                raise RuntimeError(f"{' '.join(step)} failed; see {log}")
    if not (instance / "static" / "dist" / "manifest.json").exists():
        raise RuntimeError(f"The webpack build wrote no manifest; see {log}")
    (instance / "assets-built-from").write_text(digest)
    _print(f"Assets built in {time.monotonic() - started:.0f} s.")


def _remove_collected_sources(project: Path) -> None:
    """The bundles' files of an earlier build, all but the installed npm packages: collecting
    copies files but never removes one, and a file that another set of bundles left behind
    (another InvenioRDM release, an upgrade) is built with the rest and can fail the build."""
    if not project.is_dir():
        return
    for path in project.iterdir():
        if path.name == "node_modules":
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()


def _add_npm_overrides(package_json: Path, overrides: dict[str, str]) -> None:
    package = json.loads(package_json.read_text())
    package["overrides"] = {**package.get("overrides", {}), **overrides}
    package_json.write_text(json.dumps(package, indent=2, sort_keys=True))


def prepare_instance(settings: PanelSettings, *, demo_base_url: str | None = None) -> None:
    """Tables, indices and index templates (on osmem a plain job-logs index), the
    administrator, a demo harvester."""
    script = f"""
import sys
from invenio_app.factory import create_api
from oaiharvest_test_support.panel import _prepare_in_app
app = create_api()
with app.app_context():
    _prepare_in_app({ADMIN_EMAIL!r}, {ADMIN_PASSWORD!r}, {demo_base_url!r})
"""
    subprocess.run([sys.executable, "-c", script], env=settings.environment(), check=True)


def _prepare_in_app(email: str, password: str, demo_base_url: str | None) -> None:
    from flask import current_app
    from invenio_access.models import ActionRoles
    from invenio_access.permissions import system_identity
    from invenio_accounts.proxies import current_datastore
    from invenio_db import db
    from invenio_search import current_search_client
    from invenio_search.proxies import current_search
    from invenio_search.utils import prefix_index
    from sqlalchemy_utils.functions import create_database, database_exists

    from oarepo_oaipmh_harvester.models import OAIHarvester
    from oarepo_oaipmh_harvester.proxies import current_harvester_service

    url = db.engine.url.render_as_string(hide_password=False)
    if not database_exists(url):
        create_database(url)
    db.create_all()
    list(current_search.create(ignore_existing=True))
    if current_app.config["JOBS_LOGGING"]:
        list(current_search.put_index_templates())
    else:
        # The run page still reads the job logs; an empty index answers it.
        job_logs = prefix_index("job-logs")
        if not current_search_client.indices.exists(index=job_logs):
            current_search_client.indices.create(index=job_logs)
    if current_datastore.find_user(email=email) is None:
        from flask_security.utils import hash_password

        user = current_datastore.create_user(
            email=email, password=hash_password(password), active=True, confirmed_at=db.func.now()
        )
        role = current_datastore.find_role("administrators") or current_datastore.create_role(
            name="administrators", description="Administrators"
        )
        current_datastore.add_role_to_user(user, role)
        db.session.flush()
        db.session.add(ActionRoles(action="administration-access", role=role))
        db.session.add(ActionRoles(action="superuser-access", role=role))
        db.session.commit()
    if demo_base_url and db.session.get(OAIHarvester, "demo") is not None:
        # The bundled provider listens on a new port each time.
        current_harvester_service.update(
            system_identity, "demo", {"base_url": demo_base_url}, check=False
        )
    elif demo_base_url:
        current_harvester_service.create(
            system_identity,
            {
                "id": "demo",
                "name": "Demo provider",
                "base_url": demo_base_url,
                "metadata_prefix": "oai_dc",
                "target": "oai-sample-records",
                "comment": "The bundled local provider (./run.sh panel).",
            },
            check=False,
        )


class ServedPanel:
    """The application server, a Celery worker and (optionally) celery beat, as processes."""

    def __init__(self, settings: PanelSettings, *, beat: bool = True, logs: Path | None = None):
        self.settings = settings
        self.beat = beat
        self.logs = logs or Path(tempfile.mkdtemp(prefix="oai-panel-logs-"))
        self.processes: dict[str, subprocess.Popen] = {}

    def _start(self, name: str, command: list[str]) -> subprocess.Popen:
        log = (self.logs / f"{name}.log").open("w")
        process = subprocess.Popen(
            command,
            env=self.settings.environment(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C in the terminal reaches us, we stop them
        )
        self.processes[name] = process
        return process

    def start(self) -> ServedPanel:
        self.logs.mkdir(parents=True, exist_ok=True)
        python = sys.executable
        self._start(
            "app",
            [python, "-m", "oaiharvest_test_support.panel", "serve",
             "--port", str(self.settings.port)],
        )  # fmt: skip
        self._start(
            "worker",
            [python, "-m", "celery", "-A", "invenio_app.celery", "worker", "-P", "solo",
             "-Q", self.settings.queue, "-n", f"panel-{os.getpid()}@%h", "-l", "INFO",
             "--without-gossip", "--without-mingle", "--without-heartbeat"],
        )  # fmt: skip
        if self.beat:
            self._start(
                "beat",
                [python, "-m", "celery", "-A", "invenio_app.celery", "beat", "-l", "INFO",
                 "--scheduler", "invenio_jobs.services.scheduler:RunScheduler",
                 "-s", str(self.logs / "beat-schedule"), "--max-interval", "5"],
            )  # fmt: skip
        self.wait_ready()
        return self

    def wait_ready(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        worker_log = self.logs / "worker.log"
        while True:
            for name, process in self.processes.items():
                if process.poll() is not None:
                    raise RuntimeError(f"The {name} process ended; see {self.logs / name}.log")
            app_up = False
            with suppress(OSError):
                with urllib.request.urlopen(f"{self.settings.url}/ping", timeout=2) as reply:
                    app_up = reply.status == 200
            if app_up and "ready." in worker_log.read_text(errors="replace"):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"The panel did not start in {timeout:.0f} s; see {self.logs}")
            time.sleep(0.3)

    def stop(self) -> None:
        for process in self.processes.values():
            with suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                with suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
        self.processes.clear()

    def __enter__(self) -> ServedPanel:
        return self.start()

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()


def serve(port: int) -> None:
    """The UI with /api mounted, as one WSGI application (what a web server serves)."""
    from invenio_app.wsgi import application
    from werkzeug.serving import run_simple

    run_simple("127.0.0.1", port, application, threaded=True, use_reloader=False)


@contextmanager
def search_server() -> Iterator[tuple[list[dict[str, Any]], bool]]:
    """The search hosts, and whether they are osmem-server: a real cluster when SEARCH_HOSTS
    points at one (`./run.sh opensearch` starts a node), osmem-server otherwise."""
    if os.environ.get("SEARCH_HOSTS"):
        import ast

        yield ast.literal_eval(os.environ["SEARCH_HOSTS"]), False
        return
    from osmem_server import OsmemServer

    server = OsmemServer.start(freeze=False, japanese=False)
    host, port = server.url.rstrip("/").split("://", 1)[-1].rsplit(":", 1)
    try:
        yield [{"host": host, "port": int(port)}], True
    finally:
        server.close()


def _main_panel(options: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from oarepo_oaipmh_harvester.testing.corpus import Corpus
    from oarepo_oaipmh_harvester.testing.provider import OAIPMHProvider

    corpus = Corpus.generate(options.records, start=datetime(2024, 1, 1, tzinfo=UTC))
    with search_server() as (hosts, osmem), OAIPMHProvider(corpus, page_size=100) as provider:
        settings = PanelSettings(
            instance_path=Path(options.instance).resolve(),
            database_uri=options.database,
            search_hosts=hosts,
            osmem=osmem,
            broker_url=options.broker,
            port=options.port,
        )
        build_assets(settings)
        prepare_instance(settings, demo_base_url=provider.base_url)
        panel = ServedPanel(settings, logs=settings.instance_path / "logs")
        try:
            panel.start()
            _print("")
            _print(f"Admin panel:  {settings.url}/administration/oai-harvesters")
            _print(f"Login:        {ADMIN_EMAIL} / {ADMIN_PASSWORD}  ({settings.url}/login/)")
            _print(f"Provider:     {provider.base_url} ({len(corpus)} oai_dc records)")
            _print(f"Logs:         {panel.logs}")
            _print("Ctrl-C stops the app, the worker, the scheduler and the provider.")
            while all(process.poll() is None for process in panel.processes.values()):
                time.sleep(1)
            _print("A process of the panel ended; see the logs.")
            return 1
        except KeyboardInterrupt:
            _print("\nStopping ...")
            return 0
        finally:
            panel.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command")
    serve_parser = sub.add_parser("serve", help="serve the application (used internally)")
    serve_parser.add_argument("--port", type=int, required=True)
    build_parser = sub.add_parser("build", help="build the assets only")
    for each in (parser, build_parser):
        each.add_argument("--instance", default=str(DEFAULT_INSTANCE))
    parser.add_argument("--port", type=int, default=5000)
    parser.add_argument("--records", type=int, default=500)
    parser.add_argument(
        "--database",
        default=os.environ.get(
            "SQLALCHEMY_DATABASE_URI",
            "postgresql+psycopg2://postgres@127.0.0.1:5432/oaiharvest_panel",
        ),
    )
    parser.add_argument("--broker", default="redis://127.0.0.1:6379/5")
    options = parser.parse_args(argv)
    if options.command == "serve":
        serve(options.port)
        return 0
    if options.command == "build":
        settings = PanelSettings(
            instance_path=Path(options.instance).resolve(),
            database_uri="sqlite://",
            search_hosts=[{"host": "127.0.0.1", "port": 9200}],
        )
        build_assets(settings)
        return 0
    return _main_panel(options)


if __name__ == "__main__":
    sys.exit(main())
