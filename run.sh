#!/usr/bin/env bash
# Developer entry point.
#   ./run.sh demo      a demo harvest on an embedded default (SQLite, osmem-server, local provider);
#                      --rdm: into a real InvenioRDM records service
#   ./run.sh test      the test suite: installs and starts PostgreSQL, Redis and RabbitMQ when they
#                      are missing, and the tests start a real OpenSearch node (see README)
#   ./run.sh services  only install and start PostgreSQL 15, Redis and RabbitMQ on 127.0.0.1
#   ./run.sh opensearch [--port 9200]   a real OpenSearch 2 node in the foreground (Ctrl-C stops it)
#   ./run.sh lint      ruff
#   ./run.sh bench     the harvest benchmark (arguments are passed on)
#   ./run.sh panel     the admin panel in a browser: built assets, provider, app, worker, scheduler
#   ./run.sh install   (re)create the virtualenv only
set -euo pipefail
cd "$(dirname "$0")"

VENV="${VENV:-.venv}"
PYTHON="${PYTHON:-python3}"

install() {
    if [ ! -x "$VENV/bin/python" ]; then
        "$PYTHON" -m venv "$VENV"
    fi
    "$VENV/bin/python" -m pip install --quiet --upgrade pip wheel
    # rdm: InvenioRDM as a harvest target (tests/rdm); the plain-service path does not need it.
    "$VENV/bin/python" -m pip install --quiet -e ".[tests,benchmark,rdm,docs]"
    # Test and demo support: the sample target, the theme.config of the built admin panel.
    "$VENV/bin/python" -m pip install --quiet -e tests/support
}

ensure_browser() {
    # Debian's Chromium for the end-to-end admin test and screenshots; never a browser download.
    if ! command -v chromium >/dev/null 2>&1; then
        if [ "$(id -u)" = "0" ]; then
            apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
        else
            echo "Chromium is missing: sudo apt-get install chromium" >&2
            exit 1
        fi
    fi
}

ensure_installed() {
    # Reinstall when the venv is missing or the project metadata changed since the last install.
    local stamp="$VENV/.installed-from"
    local digest
    digest=$(cat setup.cfg pyproject.toml tests/support/pyproject.toml | sha256sum | cut -d' ' -f1)
    if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$digest" ]; then
        install
        echo "$digest" > "$stamp"
    fi
}

command="${1:-test}"
shift || true
case "$command" in
    install)
        install
        ;;
    demo)
        ensure_installed
        exec "$VENV/bin/python" -m oaiharvest_test_support.demo "$@"
        ;;
    test)
        ensure_installed
        ensure_browser
        .ci/services.sh
        export SQLALCHEMY_DATABASE_URI="${SQLALCHEMY_DATABASE_URI:-postgresql+psycopg2://postgres@127.0.0.1:5432/oaiharvest_test}"
        "$VENV/bin/ruff" check --quiet .
        "$VENV/bin/sphinx-build" -W --keep-going -q -b html docs docs/_build/html
        exec "$VENV/bin/python" -m pytest tests -q "$@"
        ;;
    services)
        exec .ci/services.sh
        ;;
    opensearch)
        exec .ci/opensearch/start.sh "$@"
        ;;
    lint)
        ensure_installed
        "$VENV/bin/ruff" check .
        exec "$VENV/bin/ruff" format --check .
        ;;
    bench)
        ensure_installed
        export SQLALCHEMY_DATABASE_URI="${SQLALCHEMY_DATABASE_URI:-postgresql+psycopg2://postgres@127.0.0.1:5432/oaiharvest_bench}"
        exec "$VENV/bin/python" benchmarks/harvest.py "$@"
        ;;
    panel)
        ensure_installed
        exec "$VENV/bin/python" -m oaiharvest_test_support.panel "$@"
        ;;
    *)
        echo "unknown command: $command (demo | test | services | opensearch | lint | bench | panel | install)" >&2
        exit 2
        ;;
esac
