"""Every ``OAI_HARVESTER_*`` key the package reads is defined, with its docstring, in
``config.py``, and every key defined there is read: no default lives anywhere else."""

from __future__ import annotations

import ast
import re
from dataclasses import fields
from pathlib import Path

from oarepo_oaipmh_harvester import config
from oarepo_oaipmh_harvester.harvest.settings import protocol_config_key
from oarepo_oaipmh_harvester.protocol.options import ProtocolOptions

PACKAGE = Path(config.__file__).parent
KEY = re.compile(r"OAI_HARVESTER_[A-Z0-9_]*[A-Z0-9]")


def defined_keys() -> set[str]:
    return {name for name in vars(config) if name.startswith("OAI_HARVESTER_")}


def read_keys() -> set[str]:
    """Keys named anywhere in the package but config.py, and the protocol options' keys
    (``HarvestSettings`` builds those names from the options)."""
    found = {protocol_config_key(option.name) for option in fields(ProtocolOptions)}
    for path in [*PACKAGE.rglob("*.py"), *PACKAGE.rglob("*.html"), *PACKAGE.rglob("*.txt")]:
        if path == PACKAGE / "config.py" or "alembic" in path.parts:
            continue
        found |= set(KEY.findall(path.read_text()))
    return found


def test_every_key_read_is_defined_in_config() -> None:
    assert sorted(read_keys() - defined_keys()) == []


def test_every_key_defined_in_config_is_read() -> None:
    assert sorted(defined_keys() - read_keys()) == []


def test_every_key_in_config_has_a_docstring() -> None:
    tree = ast.parse((PACKAGE / "config.py").read_text())
    documented = set()
    for node, following in zip(tree.body, tree.body[1:], strict=False):
        if (
            isinstance(node, ast.Assign | ast.AnnAssign)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            documented |= {target.id for target in targets if isinstance(target, ast.Name)}
    assert sorted(defined_keys() - documented) == []
