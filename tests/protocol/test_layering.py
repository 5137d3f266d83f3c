"""The protocol layer stands alone: no Flask, no database, no Invenio, no Celery."""

from __future__ import annotations

import json
import os
import subprocess
import sys

FORBIDDEN_ROOTS = ("flask", "werkzeug", "sqlalchemy", "invenio_db", "invenio_base", "celery")


def test_protocol_layer_imports_neither_flask_nor_the_database() -> None:
    # A fresh interpreter: this test process has all of them loaded by other tests.
    script = (
        "import importlib, json, pkgutil, sys\n"
        "import oarepo_oaipmh_harvester.protocol as protocol\n"
        "names = [m.name for m in pkgutil.iter_modules(protocol.__path__)]\n"
        "for name in names:\n"
        "    importlib.import_module(f'oarepo_oaipmh_harvester.protocol.{name}')\n"
        "print(json.dumps({'modules': names, 'loaded': sorted(sys.modules)}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        timeout=120,
        check=True,
    )
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert {"client", "transport", "streams", "parsing"} <= set(report["modules"])
    leaked = [m for m in report["loaded"] if m.split(".")[0] in FORBIDDEN_ROOTS]
    assert leaked == []
