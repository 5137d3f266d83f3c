"""An InvenioRDM site built the way an operator builds one, for one release.

    .venv/bin/python -m tests.rdm_site.instance lock rdm15      (re)generate a release's npm lock

A virtualenv per release (``.site/<release>/venv``) with ``invenio-app-rdm`` from PyPI,
gunicorn, and the plugin installed from this checkout as a user installs a package (not
editable); an instance folder (``.site/<release>/instance``) whose ``invenio.cfg`` is written
here; the ``invenio`` commands of a site's setup; ``invenio collect`` and the webpack build
with the npm lock file committed for the release (``tests/rdm_site/locks/<release>``).

The virtualenv, the plugin in it and the built assets are each kept while what they are built
from stays the same (a digest in a stamp file next to them); the database and the indices are
made new for every test session.
"""

from __future__ import annotations

import configparser
import csv
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: python tests/rdm_site/instance.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    __package__ = "tests.rdm_site"

from .releases import RELEASES, Release

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SITES_ROOT = Path(os.environ.get("OAI_HARVESTER_SITE_ROOT", PROJECT_ROOT / ".site"))
LOCKS = Path(__file__).resolve().parent / "locks"
REPORTS = Path(os.environ.get("OAI_HARVESTER_TEST_REPORTS", PROJECT_ROOT / "test-reports")) / "site"

ADMIN_EMAIL = "admin@example.org"
"""The administrator of every site (``example.org``: RDM refuses made-up top-level domains)."""
ADMIN_PASSWORD = "harvest-admin"
MANAGER_EMAIL = "manager@example.org"
"""A second user, named harvest manager in the journey."""
MANAGER_PASSWORD = "harvest-manager"

# The vocabularies of InvenioRDM's fixtures that are cut to a few entries (an instance's own
# app_data/vocabularies.yaml wins over the packaged one): all of them would be about 15,800
# Celery tasks (7,847 languages, 6,585 ORCID names, 706 programming languages, 419 licenses),
# 15 minutes here. The harvested records use these languages and CC BY 4.0; the other
# vocabularies (resource types, roles, title, description, date and relation types, ...)
# load in full: about 240 tasks.
LANGUAGES = ("eng", "ces", "deu", "fra", "spa", "ita", "pol", "slk")
LICENSES = ("cc-by-4.0", "cc-by-sa-4.0", "cc-by-nc-4.0", "cc0-1.0", "mit", "apache-2.0")
PROGRAMMING_LANGUAGES = ("python", "javascript")


SITE_CONTENT_SECURITY_POLICY = {
    "default-src": ["'self'", "data:", "'unsafe-inline'", "blob:"],
}
"""The content security policy InvenioRDM's documentation gives an instance (fonts as data:
URIs, inline scripts and styles, blob: for previews); a page that needs more fails the journey
with the browser's console error. Plain HTTP on 127.0.0.1: no HTTPS redirect, cookies not
marked secure."""


class StepFailed(RuntimeError):
    """A command of the build failed; the message ends with its output."""


@dataclass
class SiteSettings:
    """What changes from one test session to the next: ports and the search node."""

    search_hosts: list[dict[str, Any]]
    port: int
    extra_config: dict[str, Any] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


class Timings:
    """Seconds per phase, written to the release's report folder as they are measured."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.phases: dict[str, float] = {}
        self.load: dict[str, float] = {}

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        started = time.monotonic()
        try:
            yield
        finally:
            self.phases[name] = round(time.monotonic() - started, 1)
            # The machine's load when the phase ended: the same phase takes twice as long
            # when other work shares the two cores.
            self.load[name] = round(os.getloadavg()[0], 1)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(
                json.dumps({"seconds": self.phases, "load average": self.load}, indent=2) + "\n"
            )


def _digest(*parts: bytes | str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode() if isinstance(part, str) else part)
        digest.update(b"\0")
    return digest.hexdigest()


def _checkout_files() -> list[Path]:
    """The files of this checkout that a package built from it can contain: tracked ones and
    new ones not ignored (git's view, so that build leftovers never get in)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    return sorted(
        PROJECT_ROOT / name.decode()
        for name in listed
        if name and (PROJECT_ROOT / name.decode()).is_file()
    )


PACKAGING_FILES = ("setup.cfg", "pyproject.toml", "MANIFEST.in")


def plugin_digest() -> str:
    """The plugin's source as a user's install sees it (package, packaging metadata)."""
    parts: list[bytes | str] = []
    for path in _checkout_files():
        relative = path.relative_to(PROJECT_ROOT).as_posix()
        if relative.startswith("oarepo_oaipmh_harvester/") or relative in PACKAGING_FILES:
            parts += [relative, path.read_bytes()]
    return _digest(*parts)


class Site:
    """One release's virtualenv, instance folder and the commands that build and set it up."""

    def __init__(self, release: Release, root: Path = SITES_ROOT) -> None:
        self.release = release
        self.root = root / release.key
        self.venv = self.root / "venv"
        self.instance = self.root / "instance"
        self.reports = REPORTS / release.key
        self.logs = self.reports / "logs"
        self.timings = Timings(self.reports / "timings.json")
        self.settings: SiteSettings | None = None

    # -- paths and environment -----------------------------------------------------------------
    def bin(self, name: str) -> str:
        return str(self.venv / "bin" / name)

    def environment(self) -> dict[str, str]:
        """The environment of every process of the site: its instance folder, its virtualenv
        first on PATH, and no INVENIO_* variable of ours (invenio.cfg is the configuration)."""
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("INVENIO_", "VIRTUAL_ENV", "PYTHON"))
        }
        env["INVENIO_INSTANCE_PATH"] = str(self.instance)
        env["VIRTUAL_ENV"] = str(self.venv)
        env["PATH"] = f"{self.venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env["FLASK_DEBUG"] = "0"
        return env

    def run(
        self, command: list[str], *, log: str, cwd: Path | None = None, timeout: float = 900
    ) -> str:
        """Run a build command; its output goes to logs/<log>.log and is returned. A failure
        raises StepFailed with the end of that output."""
        self.logs.mkdir(parents=True, exist_ok=True)
        path = self.logs / f"{log}.log"
        with path.open("a") as output:
            output.write(f"$ {' '.join(command)}\n")
            output.flush()
            started = time.monotonic()
            completed = subprocess.run(
                command,
                cwd=cwd or self.instance,
                env=self.environment(),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=timeout,
            )
            output.write(completed.stdout)
            output.write(
                f"# {time.monotonic() - started:.1f} s, exit code {completed.returncode}\n"
            )
        if completed.returncode != 0:
            tail = "\n".join(completed.stdout.splitlines()[-40:])
            raise StepFailed(f"{' '.join(command)} failed ({completed.returncode}):\n{tail}")
        return completed.stdout

    def invenio(self, *args: str, log: str, timeout: float = 900) -> str:
        return self.run([self.bin("invenio"), *args], log=log, timeout=timeout)

    # -- the virtualenv ------------------------------------------------------------------------
    def _venv_digest(self) -> str:
        # What the resolver sees: the release, the plugin's declared dependencies, Python
        # (a new entry point only installs the plugin again).
        metadata = configparser.ConfigParser(interpolation=None)
        metadata.read(PROJECT_ROOT / "setup.cfg")
        dependencies = [
            metadata.get("options", "python_requires", fallback=""),
            metadata.get("options", "install_requires", fallback=""),
            json.dumps(dict(metadata["options.extras_require"]), sort_keys=True),
        ]
        return _digest(
            self.release.requirement,
            sys.version.split()[0],
            *dependencies,
        )

    def ensure_venv(self) -> None:
        """The release's virtualenv: pip installs invenio-app-rdm, gunicorn and the plugin once;
        a changed plugin is installed again on its own."""
        stamp = self.venv / "built-from"
        plugin_stamp = self.venv / "plugin-built-from"
        if not (stamp.exists() and stamp.read_text() == self._venv_digest()):
            with self.timings.phase("pip install (release, plugin)"):
                self._create_venv()
            stamp.write_text(self._venv_digest())
            plugin_stamp.write_text(plugin_digest())
        elif plugin_stamp.read_text() != plugin_digest():
            with self.timings.phase("pip install (plugin again)"):
                with self._plugin_source() as source:
                    self.run(
                        [self.bin("pip"), "install", "--no-deps", "--force-reinstall", source],
                        log="pip",
                        cwd=PROJECT_ROOT,
                    )
            plugin_stamp.write_text(plugin_digest())

    @contextmanager
    def _plugin_source(self) -> Iterator[str]:
        """The checkout as a source tree of its own (what an sdist holds): pip builds the
        package from it, never from the working tree with its build leftovers."""
        with tempfile.TemporaryDirectory(prefix="oai-plugin-") as folder:
            for path in _checkout_files():
                target = Path(folder) / path.relative_to(PROJECT_ROOT)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target)
            yield f"{folder}[rdm]"

    def _create_venv(self) -> None:
        shutil.rmtree(self.venv, ignore_errors=True)
        self.venv.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "venv", str(self.venv)], check=True)
        pip = [self.bin("pip"), "install", "--quiet"]
        with self._plugin_source() as plugin:
            # One resolution, as an operator installs it: pip must find versions that
            # satisfy the release and the plugin together.
            self.run(
                [*pip, self.release.requirement, "gunicorn", plugin], log="pip", cwd=PROJECT_ROOT
            )

    def installed(self, distribution: str) -> str:
        """The version of `distribution` in the release's virtualenv."""
        return self.run(
            [self.bin("python"), "-c",
             f"from importlib.metadata import version; print(version({distribution!r}))"],
            log="versions",
        ).strip()  # fmt: skip

    # -- the instance folder -------------------------------------------------------------------
    def config(self, settings: SiteSettings) -> dict[str, Any]:
        """invenio.cfg's settings: services of this release, plain HTTP on loopback."""
        redis = self.release.redis_url
        return {
            "SECRET_KEY": f"{self.release.key}-tests-not-secret",
            "SQLALCHEMY_DATABASE_URI": self.release.database_uri(),
            "SEARCH_HOSTS": settings.search_hosts,
            "SEARCH_INDEX_PREFIX": self.release.index_prefix,
            "SITE_UI_URL": settings.url,
            "SITE_API_URL": f"{settings.url}/api",
            "TRUSTED_HOSTS": ["127.0.0.1", "localhost"],
            "BROKER_URL": redis,
            "CELERY_BROKER_URL": redis,
            "CELERY_RESULT_BACKEND": redis,
            "CACHE_REDIS_URL": redis,
            "ACCOUNTS_SESSION_REDIS_URL": redis,
            "RATELIMIT_STORAGE_URI": redis,
            "COMMUNITIES_IDENTITIES_CACHE_REDIS_URL": redis,
            "IIIF_CACHE_REDIS_URL": redis,
            "MAIL_SUPPRESS_SEND": True,
            "SESSION_COOKIE_SECURE": False,
            "REMEMBER_COOKIE_SECURE": False,
            "THEME_SITENAME": f"Harvest test site ({self.release.title})",
            # The bundled provider runs on 127.0.0.1.
            "OAI_HARVESTER_ALLOW_PRIVATE_NETWORKS": True,
            "OAI_HARVESTER_REQUEST_TIMEOUT": (5.0, 30.0),
            "OAI_HARVESTER_MAX_RETRY_WAIT": 10.0,
            # Batches are Celery tasks: harvests write through the same prefork worker as
            # every other module's tasks.
            "OAI_HARVESTER_WRITE_MODE": "celery",
            **settings.extra_config,
        }

    def write_config(self, settings: SiteSettings) -> None:
        """``invenio.cfg`` in the instance folder: Python, as an operator writes it."""
        self.settings = settings
        self.instance.mkdir(parents=True, exist_ok=True)
        lines = [
            f"# {self.release.title} test site, written by tests/rdm_site/instance.py.",
            "from invenio_app.config import APP_DEFAULT_SECURE_HEADERS as _HEADERS",
            "",
        ]
        lines += [f"{key} = {value!r}" for key, value in self.config(settings).items()]
        lines += [
            "APP_DEFAULT_SECURE_HEADERS = {",
            "    **_HEADERS,",
            f"    'content_security_policy': {SITE_CONTENT_SECURITY_POLICY!r},",
            "    'force_https': False,",
            "    'session_cookie_secure': False,",
            "}",
            "",
        ]
        (self.instance / "invenio.cfg").write_text("\n".join(lines))

    def write_app_data(self) -> None:
        """The instance's ``app_data`` (InvenioRDM reads an instance's fixture files before its
        packaged ones): ``vocabularies.yaml`` with the large vocabularies cut to the entries
        used, ``users.yaml`` with the site's accounts."""
        import yaml

        fixtures = self._rdm_records_fixtures()
        app_data = self.instance / "app_data"
        (app_data / "vocabularies").mkdir(parents=True, exist_ok=True)
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        cut = {
            "languages": ("lng", "languages.yaml", LANGUAGES),
            "licenses": ("lic", "licenses.csv", LICENSES),
            "code:programmingLanguages": (
                "pl", "contrib/codemeta/programming_languages.yaml", PROGRAMMING_LANGUAGES,
            ),
            "names": ("names", "names.yaml", ()),
        }  # fmt: skip
        listing: dict[str, dict[str, str]] = {}
        for vocabulary, (pid_type, source, ids) in cut.items():
            path = fixtures / "vocabularies" / source
            name = f"vocabularies/{vocabulary.replace(':', '_')}{path.suffix}"
            if path.suffix == ".csv":
                with path.open(encoding="utf-8", newline="") as stream:
                    rows = list(csv.reader(stream))
                entries = [row for row in rows[1:] if row[0] in ids]
                with (app_data / name).open("w", encoding="utf-8", newline="") as stream:
                    csv.writer(stream).writerows([rows[0], *entries])
            else:
                with path.open(encoding="utf-8") as stream:
                    entries = [
                        entry
                        for entry in yaml.load(stream, Loader=loader) or []
                        if entry["id"] in ids
                    ]
                (app_data / name).write_text(yaml.safe_dump(entries, allow_unicode=True))
            if len(entries) != len(ids):
                raise StepFailed(f"{source} lacks some of {ids}")
            listing[vocabulary] = {"pid-type": pid_type, "data-file": name}
        (app_data / "vocabularies.yaml").write_text(yaml.safe_dump(listing))
        users = [
            {"email": ADMIN_EMAIL, "password": ADMIN_PASSWORD, "roles": ["admin"]},
            {"email": MANAGER_EMAIL, "password": MANAGER_PASSWORD},
        ]
        for user in users:
            user.update(active=True, confirmed=True)
        (app_data / "users.yaml").write_text(yaml.safe_dump(users))

    def _rdm_records_fixtures(self) -> Path:
        found = self.run(
            [self.bin("python"), "-c",
             "import invenio_rdm_records, pathlib; "
             "print(pathlib.Path(invenio_rdm_records.__file__).parent / 'fixtures' / 'data')"],
            log="versions",
        ).strip()  # fmt: skip
        return Path(found)

    # -- assets --------------------------------------------------------------------------------
    def lock_file(self) -> Path:
        return LOCKS / self.release.key / "package-lock.json"

    def _bundles_digest(self) -> str:
        """The packages that declare webpack bundles, with their versions, in the venv."""
        return self.run(
            [self.bin("python"), "-c",
             "from importlib import metadata\n"
             "print(sorted(f\"{d.metadata['Name']}=={d.version}\" for d in metadata.distributions()"
             " if any(e.group == 'invenio_assets.webpack' for e in d.entry_points)))"],
            log="versions",
        ).strip()  # fmt: skip

    def _assets_digest(self) -> str:
        lock = self.lock_file()
        own_assets = PROJECT_ROOT / "oarepo_oaipmh_harvester" / "assets"
        parts: list[bytes | str] = [
            self._bundles_digest(),
            json.dumps(self.release.npm_overrides, sort_keys=True),
            lock.read_bytes() if lock.exists() else b"",
        ]
        for path in sorted(own_assets.rglob("*")):
            if path.is_file():
                parts += [str(path.relative_to(own_assets)), path.read_bytes()]
        return _digest(*parts)

    def assets_built(self) -> bool:
        stamp = self.instance / "assets-built-from"
        manifest = self.instance / "static" / "dist" / "manifest.json"
        return manifest.exists() and stamp.exists() and stamp.read_text() == self._assets_digest()

    def ensure_assets(self, before_build: Callable[[], None] | None = None) -> None:
        """``invenio collect``, the webpack project with the release's npm lock installed, and
        the webpack build; kept while the bundles, the lock and the plugin's own assets are
        the same. `before_build` is called before the (CPU-bound) build starts: builds of
        several releases take turns there."""
        if self.assets_built():
            return
        if not self.lock_file().exists():
            raise StepFailed(
                f"No npm lock for {self.release.key}: generate it once with "
                f"`.venv/bin/python -m tests.rdm_site.instance lock {self.release.key}`"
            )
        digest = self._assets_digest()
        with self.timings.phase("invenio collect"):
            self.invenio("collect", "-v", log="assets")
        with self.timings.phase("invenio webpack create"):
            self.create_webpack_project()
        with self.timings.phase("npm ci (lock file)"):
            self.npm_ci()
        if before_build is not None:
            before_build()
        with self.timings.phase("invenio webpack build"):
            self.invenio("webpack", "build", log="assets")
        manifest = self.instance / "static" / "dist" / "manifest.json"
        if not manifest.exists():
            raise StepFailed(f"The webpack build wrote no manifest; see {self.logs}/assets.log")
        (self.instance / "assets-built-from").write_text(digest)

    @property
    def assets(self) -> Path:
        return self.instance / "assets"

    def create_webpack_project(self) -> None:
        """``invenio webpack create``, then what an instance's own assets folder adds: the
        Semantic UI theme.config (InvenioRDM's theme layered over invenio-theme's example),
        the folders RDM's bundles import from, and the release's npm overrides."""
        self.invenio("webpack", "create", log="assets")
        less = self.assets / "less"
        (less / "site").mkdir(parents=True, exist_ok=True)
        example = Path(
            self.run(
                [self.bin("python"), "-c",
                 "import invenio_theme, pathlib; print(pathlib.Path(invenio_theme.__file__).parent"
                 " / 'assets/semantic-ui/less/invenio_theme/theme.config.example')"],
                log="versions",
            ).strip()
        ).read_text()  # fmt: skip
        theme = []
        for line in example.splitlines():
            if line.startswith("@siteFolder"):
                line = "@siteFolder  : '../../less/site';"
            elif line.startswith("@import (multiple)"):
                line = '@import (multiple) "themes/rdm/theme.less";'
            theme.append(line)
        (less / "theme.config").write_text("\n".join(theme) + "\n")
        for folder in ("templates/custom_fields", "templates/search"):
            (self.assets / folder).mkdir(parents=True, exist_ok=True)
        package = self.assets / "package.json"
        manifest = json.loads(package.read_text())
        if self.release.npm_overrides:
            manifest["overrides"] = dict(self.release.npm_overrides)
        package.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")

    def npm_ci(self) -> None:
        """Exactly the locked packages. node_modules is kept while package.json and the lock
        are the same (``npm ci`` would remove and download it all again)."""
        shutil.copy(self.lock_file(), self.assets / "package-lock.json")
        stamp = self.assets / "node_modules" / ".installed-from"
        digest = _digest((self.assets / "package.json").read_bytes(), self.lock_file().read_bytes())
        if stamp.exists() and stamp.read_text() == digest:
            return
        self.run(
            ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=warn"],
            log="assets",
            cwd=self.assets,
        )
        stamp.write_text(digest)

    def generate_lock(self) -> Path:
        """A new lock for the release: the project as the build creates it, ``npm install``
        against the registry, the resulting package-lock.json copied to tests/rdm_site/locks."""
        self.invenio("collect", "-v", log="lock")
        self.create_webpack_project()
        (self.assets / "package-lock.json").unlink(missing_ok=True)
        shutil.rmtree(self.assets / "node_modules", ignore_errors=True)
        self.run(["npm", "install", "--no-audit", "--no-fund"], log="lock", cwd=self.assets)
        target = self.lock_file()
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(self.assets / "package-lock.json", target)
        return target


class SiteBuilds:
    """Every release's virtualenv and assets, built in the background from the moment the
    first site is asked for: the pip installs and the npm installs side by side (mostly waiting
    for the network), the webpack builds one after the other in the order of the releases (they
    want the CPU). The first site is set up and tested while the next one builds."""

    def __init__(self, sites: dict[str, tuple[Site, SiteSettings]]) -> None:
        self.sites = sites
        self._pool = ThreadPoolExecutor(max_workers=2 * len(sites))
        self._venvs: dict[str, Future[None]] = {}
        self._assets: dict[str, Future[None]] = {}
        for key, (site, settings) in sites.items():
            # Collecting and building boot the application: it reads invenio.cfg.
            site.write_config(settings)
            self._venvs[key] = self._pool.submit(site.ensure_venv)
        previous: Future[None] | None = None
        for key, (site, _) in sites.items():
            self._assets[key] = self._pool.submit(self._build, site, self._venvs[key], previous)
            previous = self._assets[key]

    @staticmethod
    def _build(site: Site, venv: Future[None], previous: Future[None] | None) -> None:
        venv.result()

        def after_previous() -> None:
            if previous is not None:
                wait([previous])  # its failure is its own site's to report

        site.ensure_assets(before_build=after_previous)

    def ready(self, key: str) -> tuple[Site, SiteSettings]:
        """The release's site once its virtualenv and assets are built (or their error)."""
        self._assets[key].result()
        return self.sites[key]

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


class SiteSetup:
    """The commands an operator runs to set a site up (invenio-cli's ``services setup`` for
    InvenioRDM 14 and 15), on a database, a Redis database and indices made new.

    While it is open, ``invenio rpc-server`` (invenio-app's server that runs CLI commands in
    one application) serves the commands: the application boots once instead of once per
    command (about 9 s of CPU each here)."""

    def __init__(self, site: Site) -> None:
        self.site = site
        self.socket_path = site.instance / "rpc.sock"
        self._server: subprocess.Popen | None = None

    def reset(self, search_url: str) -> None:
        """Nothing left of an earlier session: the database, the Redis database (broker,
        cache, sessions) and the indices of this release's prefix."""
        import redis
        import requests
        from sqlalchemy_utils.functions import database_exists, drop_database

        uri = self.site.release.database_uri()
        if database_exists(uri):
            drop_database(uri)
        client = redis.Redis.from_url(self.site.release.redis_url)
        try:
            client.flushdb()
        finally:
            client.close()
        prefix = self.site.release.index_prefix
        requests.delete(
            f"{search_url}/{prefix}*", params={"expand_wildcards": "all"}, timeout=60
        ).raise_for_status()
        requests.delete(f"{search_url}/_data_stream/{prefix}*", timeout=60)
        requests.delete(f"{search_url}/_index_template/{prefix}*", timeout=60)

    def __enter__(self) -> SiteSetup:
        with self.site.timings.phase("invenio rpc-server start"):
            self._server = self._start_rpc_server(self.socket_path)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the RPC server (the setup's commands are done)."""
        if self._server is None:
            return
        self._server.terminate()  # it stops on SIGTERM and removes its socket
        try:
            self._server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._server.kill()
            self._server.wait()
        self._server = None

    def invenio(self, *command: str, timeout: float = 900) -> str:
        """``invenio <command>``, run by the RPC server; its output.

        Sent as invenio-cli sends it: one JSON line ``{"argv": [...]}`` on the server's Unix
        socket, one JSON line back with the exit code and the output (``invenio rpc-server
        send`` would do the same after loading every package's commands, 4 s of CPU)."""
        log = self.site.logs / "setup.log"
        started = time.monotonic()
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(timeout)
            client.connect(str(self.socket_path))
            client.sendall(json.dumps({"argv": list(command)}).encode() + b"\n")
            with client.makefile("rb") as replies:
                reply = json.loads(replies.readline())
        output = reply["stdout"] + reply["stderr"]
        with log.open("a") as stream:
            stream.write(f"$ invenio {' '.join(command)}  (rpc-server)\n{output}")
            stream.write(f"# {time.monotonic() - started:.1f} s, exit code {reply['exit_code']}\n")
        if reply["exit_code"] != 0:
            tail = "\n".join(output.splitlines()[-40:])
            raise StepFailed(f"invenio {' '.join(command)} failed ({reply['exit_code']}):\n{tail}")
        return reply["stdout"]

    def run(self) -> str:
        """invenio-cli's setup steps for InvenioRDM 14 and 15, then ``invenio rdm-records
        fixtures`` (the users of app_data/users.yaml, InvenioRDM's vocabularies queued as
        Celery tasks: no worker runs yet) and the administrator's personal access token,
        which it returns."""
        site, invenio = self.site, self.invenio
        site.write_app_data()
        with site.timings.phase("invenio db, files, roles, index, custom fields, fixtures"):
            invenio("db", "init", "create")
            invenio("files", "location", "create", "--default", "default-location",
                    str(site.instance / "data"))  # fmt: skip
            invenio("roles", "create", "admin")
            invenio("access", "allow", "superuser-access", "role", "admin")
            invenio("index", "init")
            invenio("rdm-records", "custom-fields", "init")
            invenio("communities", "custom-fields", "init")
            invenio("rdm", "fixtures")
            invenio("queues", "declare")
            # What the plugin's README asks of a site that installs it.
            invenio("alembic", "upgrade")
        with site.timings.phase("invenio rdm-records fixtures (users; vocabularies queued)"):
            invenio("rdm-records", "fixtures")
        with site.timings.phase("invenio tokens create"):
            output = invenio(
                "tokens", "create", "--name", "site-tests", "--user", ADMIN_EMAIL, "--internal"
            )
            return output.strip().splitlines()[-1].strip()

    def _start_rpc_server(self, socket_path: Path, timeout: float = 180) -> subprocess.Popen:
        site = self.site
        socket_path.unlink(missing_ok=True)
        site.logs.mkdir(parents=True, exist_ok=True)
        log = site.logs / "rpc-server.log"
        with log.open("w") as output:
            server = subprocess.Popen(
                [site.bin("invenio"), "rpc-server", "start", "--socket", str(socket_path)],
                cwd=site.instance,
                env=site.environment(),
                stdout=output,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + timeout
        while "RPC server listening" not in log.read_text(errors="replace"):
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                raise StepFailed(f"invenio rpc-server did not start; see {log}")
            time.sleep(0.2)
        return server

    def session_cookie(self) -> str:
        """A session of the administrator from the site's own login form (session_login.py,
        an application of its own), made without the served site answering a request."""
        login = Path(__file__).with_name("session_login.py")
        output = self.site.run(
            [self.site.bin("python"), str(login), ADMIN_EMAIL, ADMIN_PASSWORD], log="setup"
        )
        return output.strip().splitlines()[-1].strip()


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] != "lock" or argv[1] not in RELEASES:
        print(f"usage: python -m tests.rdm_site.instance lock {{{','.join(RELEASES)}}}")
        return 2
    site = Site(RELEASES[argv[1]])
    site.ensure_venv()
    # Collecting and creating the webpack project boot the application: a configuration that
    # needs no running service is enough.
    site.write_config(SiteSettings(search_hosts=[{"host": "127.0.0.1", "port": 9200}], port=5000))
    print(f"Lock written: {site.generate_lock()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
