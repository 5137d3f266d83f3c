"""Which transformer a name stands for, with which options, and in which chain of steps.

Decision owned here: a name is looked up in configuration first, then in the entry point group
``oarepo_oaipmh_harvester.transformers``; a configured name may stand for a transformer with
options or for a chain whose first step transforms and whose later steps adjust; a
configuration of the wrong shape fails when the name is asked for (a run starts), not on the
first record.
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Mapping, Sequence
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

from werkzeug.utils import import_string

from .base import Transformer, transform_warnings
from .files import FileReference, transform_files

if TYPE_CHECKING:
    from ..protocol.records import OAIRecord

TRANSFORMERS_ENTRY_POINT_GROUP = "oarepo_oaipmh_harvester.transformers"


class TransformerChain:
    """Steps run in order on one record: the first transforms it, each later one adjusts the
    data the step before returned. ``last_warnings`` holds the warnings of every step of the
    last record, in step order; a TransformError in any step fails the record.
    ``last_files`` are the files the first step found (:func:`.files.transform_files`); a
    later step that sets a ``last_files`` other than None replaces them, the last such step
    winning (an adjuster that keeps the files sets none, or None)."""

    def __init__(self, name: str, steps: Sequence[Any]) -> None:
        self.name = name
        self.steps = tuple(steps)
        self.last_warnings: list[str] = []
        self.last_files: list[FileReference] = []

    def transform(self, record: OAIRecord) -> dict[str, Any]:
        self.last_warnings = warnings = []
        self.last_files = []
        first, *later = self.steps
        data = first.transform(record)
        warnings.extend(transform_warnings(first))
        files = transform_files(first)
        for step in later:
            data = step.adjust(record, data)
            warnings.extend(transform_warnings(step))
            if getattr(step, "last_files", None) is not None:
                files = transform_files(step)
        self.last_files = files
        return data


_SPEC_KEYS = {"transformer", "options"}


class TransformerOutput(enum.Enum):
    """What a transformer's records are, for the check that they fit the target."""

    INVENIORDM = "InvenioRDM records"
    """An InvenioRDM transformer (its first step an RDMTransformer): for InvenioRDM only."""
    PLAIN = "plain data"
    """One of this package's others (``oai_dc``): never for InvenioRDM."""
    SITE = "the site's own"
    """A transformer the site registered itself: it knows where it fits."""


class TransformerRegistry:
    """Named transformers from the entry point group, overridden by configuration.

    A configured value is a class, an object, an import string (``"module:Class"``), or a
    mapping: ``{"transformer": <reference>, "options": {...}}`` (the class is made with the
    options as keyword arguments) or ``{"chain": [<step>, ...]}``. A reference or a step is
    a registered name, an import string, a class, or such a ``transformer`` mapping; a step
    that names a chain brings in that chain's steps. Every step after the first needs an
    ``adjust(record, data)`` method (:class:`Adjuster`).
    """

    def __init__(self, configured: Mapping[str, Any] | None = None) -> None:
        self._factories: dict[str, Any] = {
            ep.name: ep for ep in entry_points(group=TRANSFORMERS_ENTRY_POINT_GROUP)
        }
        self._factories.update(configured or {})
        self._imported: dict[str, Any] = {}  # import string or entry point name -> object
        self._resolved: dict[str, list[tuple[Any, dict[str, Any]]]] = {}

    def names(self) -> list[str]:
        """Names an operator may choose from."""
        return sorted(self._factories)

    def __contains__(self, name: str) -> bool:
        return name in self._factories

    def get(self, name: str, settings: Mapping[str, Any] | None = None) -> Transformer:
        """The transformer registered under `name`: a single one, or a TransformerChain.

        `settings` are a harvester's own options for the step that transforms the record
        (the first), winning over the configured ones; a setting that step does not take is
        a ValueError (:meth:`takes` asks first). KeyError names an unknown transformer (and
        the chain step that asked for it); ValueError a configuration of the wrong shape. A
        class is instantiated on every call: each writer (one per run, or per batch task)
        gets its own instance, so a transformer's caches (vocabulary look-ups) and its
        ``last_warnings`` live for one run and are never shared between threads.
        """
        steps = list(self._resolved_steps(name))
        if settings:
            factory, options = steps[0]
            wanted = {**options, **settings}
            if not isinstance(factory, type):
                raise ValueError(f"Transformer {name!r} takes no options ({sorted(settings)}).")
            _check_options(factory, wanted, f"Transformer {name!r}")
            steps[0] = (factory, wanted)
        instances = [_instance(factory, options) for factory, options in steps]
        return instances[0] if len(instances) == 1 else TransformerChain(name, instances)

    def first_step(self, name: str) -> tuple[Any, dict[str, Any]]:
        """The class (or object) of the step of `name` that transforms the record, and the
        options configured for it."""
        factory, options = self._resolved_steps(name)[0]
        return factory, dict(options)

    def output_of(self, name: str) -> TransformerOutput:
        """What the transformer (or chain) `name` makes, by its step that transforms the
        record (KeyError or ValueError for an unknown or misconfigured name)."""
        from .rdm.base import RDMTransformer

        factory, _ = self._resolved_steps(name)[0]
        kind = factory if isinstance(factory, type) else type(factory)
        if issubclass(kind, RDMTransformer):
            return TransformerOutput.INVENIORDM
        if kind.__module__.split(".")[0] == __name__.split(".")[0]:
            return TransformerOutput.PLAIN
        return TransformerOutput.SITE

    def takes(self, name: str, option: str) -> bool:
        """Whether the step of `name` that transforms the record takes the keyword `option`
        (False for an unknown or misconfigured name: that is reported where it is used)."""
        try:
            factory, _ = self._resolved_steps(name)[0]
        except (KeyError, ValueError):
            return False
        if not isinstance(factory, type):
            return False
        try:
            parameters = inspect.signature(factory).parameters
        except ValueError:
            return False
        return option in parameters or any(
            p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
        )

    def _resolved_steps(self, name: str) -> list[tuple[Any, dict[str, Any]]]:
        if name not in self._resolved:
            if name not in self._factories:
                raise KeyError(f"Unknown transformer {name!r}; known: {', '.join(self.names())}.")
            steps = self._steps(name, f"Transformer {name!r}", ())
            _check_chain(steps, f"Transformer {name!r}")
            self._resolved[name] = steps
        return self._resolved[name]

    def _steps(
        self, reference: Any, where: str, trail: tuple[str, ...]
    ) -> list[tuple[Any, dict[str, Any]]]:
        """The (factory, options) steps that `reference` stands for."""
        if isinstance(reference, str) and reference in self._factories:
            if reference in trail:
                cycle = " -> ".join((*trail, reference))
                raise ValueError(f"{where}: the transformers refer to each other ({cycle}).")
            return self._steps(self._factories[reference], where, (*trail, reference))
        if isinstance(reference, Mapping):
            return self._spec_steps(reference, where, trail)
        return [(self._load(reference, where), {})]

    def _spec_steps(
        self, spec: Mapping[str, Any], where: str, trail: tuple[str, ...]
    ) -> list[tuple[Any, dict[str, Any]]]:
        if set(spec) == {"chain"}:
            chain = spec["chain"]
            if isinstance(chain, str | bytes) or not isinstance(chain, Sequence) or not chain:
                raise ValueError(f"{where}: 'chain' must be a non-empty list of steps.")
            return [
                step
                for number, reference in enumerate(chain, start=1)
                for step in self._steps(reference, f"{where}, step {number}", trail)
            ]
        if "transformer" not in spec or not set(spec) <= _SPEC_KEYS:
            raise ValueError(
                f"{where}: a mapping needs 'transformer' (and optional 'options') or only "
                f"'chain'; got {sorted(spec)}."
            )
        options = spec.get("options") or {}
        if not isinstance(options, Mapping):
            raise ValueError(f"{where}: 'options' must be a mapping of keyword arguments.")
        steps = self._steps(spec["transformer"], where, trail)
        if not options:
            return steps
        if len(steps) != 1:
            raise ValueError(f"{where}: options are for one transformer, not for a chain.")
        factory, inherited = steps[0]
        return [(factory, {**inherited, **options})]

    def _load(self, reference: Any, where: str) -> Any:
        """A class or object from an entry point, an import string, or as it is."""
        if not isinstance(reference, str) and not hasattr(reference, "load"):
            return reference
        key = reference if isinstance(reference, str) else f"entry point {reference.name}"
        if key not in self._imported:
            if isinstance(reference, str):
                if ":" not in reference and "." not in reference:
                    raise KeyError(
                        f"{where}: unknown transformer {reference!r}; "
                        f"known: {', '.join(self.names())}."
                    )
                try:
                    self._imported[key] = import_string(reference)
                except ImportError as error:
                    raise KeyError(f"{where}: cannot import {reference!r}: {error}") from None
            else:
                self._imported[key] = reference.load()
        return self._imported[key]


def _check_chain(steps: list[tuple[Any, dict[str, Any]]], where: str) -> None:
    """Fail when the transformer is asked for, not on its first record."""
    for number, (factory, options) in enumerate(steps, start=1):
        step = f"{where}, step {number}" if len(steps) > 1 else where
        if options and not isinstance(factory, type):
            raise ValueError(f"{step}: options need a class; {factory!r} is an object.")
        if isinstance(factory, type):
            _check_options(factory, options, step)
        if number == 1 and not callable(getattr(factory, "transform", None)):
            raise ValueError(f"{step}: {factory!r} has no transform(record) method.")
        if number > 1 and not callable(getattr(factory, "adjust", None)):
            raise ValueError(
                f"{step}: {factory!r} has no adjust(record, data) method; "
                f"only the first step of a chain transforms the record."
            )


def _check_options(factory: type, options: dict[str, Any], step: str) -> None:
    """The class takes these keyword arguments (and needs no others)."""
    try:
        signature = inspect.signature(factory)
    except ValueError:  # no signature to be had (a class written in C)
        return
    try:
        signature.bind(**options)
    except TypeError as error:
        raise ValueError(f"{step}: options {sorted(options)} of {factory!r}: {error}.") from None


def _instance(factory: Any, options: dict[str, Any]) -> Any:
    return factory(**options) if isinstance(factory, type) else factory
