"""The package's shape: production modules never import the test support, and the wheel holds
of it only what a site may use to test its own setup (the provider and its corpus)."""

from __future__ import annotations

import ast
from pathlib import Path

import oarepo_oaipmh_harvester

PACKAGE = Path(oarepo_oaipmh_harvester.__file__).parent


def _imports(path: Path) -> set[str]:
    """Absolute names of every module that `path` imports (relative imports resolved)."""
    module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")
            if node.level:
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names.add(target)
            names.update(f"{target}.{alias.name}" for alias in node.names)
    return names


TEST_SUPPORT = ("oarepo_oaipmh_harvester.testing", "oaiharvest_test_support")


def test_production_code_never_imports_the_test_support():
    offenders = {}
    for path in PACKAGE.rglob("*.py"):
        if "testing" in path.relative_to(PACKAGE).parts:
            continue
        testing = {name for name in _imports(path) if name.startswith(TEST_SUPPORT)}
        if testing:
            offenders[str(path.relative_to(PACKAGE))] = sorted(testing)
    assert offenders == {}


def test_the_check_sees_a_relative_import_of_the_test_support(tmp_path):
    # The rule above must be able to fail: ext.py once registered testing.sample_records.
    fake = PACKAGE / "_fake_for_test.py"
    fake.write_text("from .testing.provider import OAIPMHProvider\n")
    try:
        assert "oarepo_oaipmh_harvester.testing.provider" in _imports(fake)
    finally:
        fake.unlink()


def test_the_wheel_holds_only_the_provider_and_its_corpus_of_the_test_support():
    """The demo, the panel, the RDM bootstrap, the Celery apps and the sample target live in
    the test-support distribution (tests/support), never on a site; the provider, its corpora
    of each format and the reader of recorded responses do ship."""
    shipped = {
        str(path.relative_to(PACKAGE / "testing"))
        for path in (PACKAGE / "testing").rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    corpora = {"corpus.py", "corpus_marc.py", "corpus_openaire.py", "recorded.py"}
    assert shipped == {"__init__.py", "provider.py", *corpora}
    assert all(
        not name.startswith(("oaiharvest_test_support", "flask", "invenio"))
        for module in ("provider.py", *corpora)
        for name in _imports(PACKAGE / "testing" / module)
    )


DRAFT_PACKAGES = ("invenio_rdm_records", "invenio_drafts_resources")


def _rdm_modules() -> set[Path]:
    """The modules that exist for InvenioRDM: the drafts adapter, its PID registration (which
    it imports only for an RDM service), what it asks of RDM's records (each helper importing
    RDM only when asked) and the RDM transformers (each imports RDM only when used)."""
    return {
        PACKAGE / "harvest" / "targets" / "drafts.py",
        PACKAGE / "harvest" / "targets" / "rdm_pids.py",
        PACKAGE / "harvest" / "targets" / "rdm_state.py",
        *(PACKAGE / "transformers" / "rdm").rglob("*.py"),
    }


def test_only_the_rdm_modules_import_rdm():
    """The plain-service path works without the ``rdm`` extra."""
    allowed = _rdm_modules()
    offenders = {
        str(path.relative_to(PACKAGE)): sorted(n for n in names if n.startswith(DRAFT_PACKAGES))
        for path in PACKAGE.rglob("*.py")
        if path not in allowed
        for names in [_imports(path)]
        if any(n.startswith(DRAFT_PACKAGES) for n in names)
    }
    assert offenders == {}


def test_the_engine_imports_without_rdm():
    import subprocess
    import sys

    blocked = "; ".join(f"sys.modules[{name!r}] = None" for name in DRAFT_PACKAGES)
    code = (
        f"import sys; {blocked}; "
        "import oarepo_oaipmh_harvester.harvest.assembly, oarepo_oaipmh_harvester.harvest.targets"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
