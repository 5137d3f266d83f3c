"""The arguments of a harvest run, described once.

The invenio-jobs job type (run form, scheduler, Job edit page), the REST run body, the admin
panel's "Run now" form and the command line all load their arguments with `RunArgumentsSchema`
(the job type mixes in invenio-jobs' `PredefinedArgsSchema`), so that one argument has one name
and one meaning everywhere.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from flask import current_app
from invenio_i18n import lazy_gettext as _
from marshmallow import Schema, ValidationError, fields, pre_load, validate, validates_schema
from marshmallow_utils.fields import TZDateTime

from .harvest.request import OPTION_KINDS, RunKind, RunRequest
from .harvest.window import SinceSource, since_source_of
from .text import StorableText, field_reference

WHITESPACE = r"\s+"
WHITESPACE_OR_COMMAS = r"[\s,]+"


class PlainList(fields.String):
    """A list of plain values, also accepted as one text of values separated by `separators`.

    invenio-administration's form renderer (and so invenio-jobs' run form and Job edit page)
    has no widget for a list of plain values: its array widget expects items with sub-fields
    and blanks the page. A `String` subclass is described to it as text (a textarea with
    ``metadata={"rows": n}``), while JSON clients keep sending and receiving real lists.
    """

    def __init__(
        self,
        inner: fields.Field,
        *,
        separators: str = WHITESPACE_OR_COMMAS,
        max_items: Callable[[], int] | None = None,
        too_many: str = "Give at most {limit} values ({given} given).",
        **kwargs: Any,
    ) -> None:
        """`max_items` gives the limit when a value is loaded (it may come from configuration);
        `too_many` says so, with ``{limit}`` and ``{given}``."""
        super().__init__(**kwargs)
        self.inner = inner
        self.separators = re.compile(separators)
        self.max_items = max_items
        self.too_many = too_many

    def _serialize(self, value: Any, attr: str | None, obj: Any, **kwargs: Any) -> Any:
        if value is None:
            return None
        return [self.inner._serialize(item, attr, obj, **kwargs) for item in value]

    def _deserialize(
        self, value: Any, attr: str | None, data: Mapping[str, Any] | None, **kwargs: Any
    ) -> list[Any]:
        if isinstance(value, str):
            items: list[Any] = [item for item in self.separators.split(value) if item]
        elif isinstance(value, list | tuple):
            items = list(value)
        else:
            raise ValidationError("Give a list, or the values separated by spaces or new lines.")
        # Counted before any item is loaded: a list far over the limit costs nothing more.
        limit = self.max_items() if self.max_items is not None else None
        if limit is not None and len(items) > limit:
            raise ValidationError(self.too_many.format(limit=limit, given=len(items)))
        loaded, errors = [], {}
        for index, item in enumerate(items):
            if isinstance(item, list | dict):
                errors[index] = ["Give plain values, not nested lists or objects."]
                continue
            try:
                loaded.append(self.inner.deserialize(item, **kwargs))
            except ValidationError as error:
                errors[index] = error.messages
        if errors:
            raise ValidationError(errors)
        return loaded


SINCE_FORMS = "2024-05-01, 2024-05-01T00:00:00Z or 2024-05-01T02:00:00+02:00"
"""What `since` looks like, for help texts and refusals."""


def parse_since(value: Any) -> datetime:
    """The moment a run's `since` names, in UTC: ISO 8601 as a date (its midnight, UTC), or a
    date and time with ``Z``, with an offset (converted) or without a zone (taken as UTC).

    The one parser of `since` for every surface: the command line hands its text here too.
    """
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.strip())
        except ValueError:
            raise ValidationError(
                f"Give an ISO 8601 date or date and time, e.g. {SINCE_FORMS}."
            ) from None
    else:
        raise ValidationError(f"Give an ISO 8601 date or date and time, e.g. {SINCE_FORMS}.")
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


class Since(TZDateTime):
    """`since` (:func:`parse_since`); shown as the date and time field it is to forms."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> datetime:
        return parse_since(value)


def max_run_identifiers() -> int:
    """How many identifiers one run may ask for (each is a GetRecord request)."""
    return current_app.config["OAI_HARVESTER_MAX_RUN_IDENTIFIERS"]


def flag(description: str, **metadata: Any) -> fields.Boolean:
    """A yes-or-no argument, no unless given; `metadata` adds to its description (a form's
    ``title``, say)."""
    return fields.Boolean(load_default=False, metadata={**metadata, "description": description})


class RunArgumentsSchema(Schema):
    """What may be asked of one run; everything optional (a plain run is incremental)."""

    @pre_load
    def _drop_empty(self, data: Any, **kwargs: Any) -> Any:
        # Forms send the fields left empty as "", null or []: not given.
        if not isinstance(data, dict):
            return data
        return {key: value for key, value in data.items() if value not in ("", None, [])}

    since = Since(
        timezone=UTC,
        format="iso",
        allow_none=True,
        metadata={
            "description": _(
                "Harvest changes from this time on: ISO 8601, a date or a date and time with Z "
                "or an offset (e.g. 2024-05-01T00:00:00Z; without a zone it is UTC). Empty: "
                "continue from the harvester's watermark."
            )
        },
    )
    full = flag(_("Harvest everything, ignoring `since` and the watermark."))
    identifiers = PlainList(
        fields.String(validate=[validate.Length(min=1, max=1024), StorableText()]),
        separators=WHITESPACE,
        max_items=max_run_identifiers,
        too_many=(
            "At most {limit} identifiers per run (OAI_HARVESTER_MAX_RUN_IDENTIFIERS); {given} "
            "were given. Split them over several runs, or harvest everything with a full run."
        ),
        load_default=None,
        allow_none=True,
        metadata={
            "rows": 3,
            "description": _(
                "Harvest only these OAI identifiers (GetRecord), one per line; at most "
                "OAI_HARVESTER_MAX_RUN_IDENTIFIERS (1000 unless configured). Empty: all."
            ),
        },
    )
    reconcile_only = flag(
        _("List identifiers only and delete local records the provider no longer has.")
    )
    reindex = flag(
        _(
            "Send every local record of this harvester to the search index again "
            "(no request to the provider)."
        )
    )
    rewrite = flag(
        _(
            "Transform every tracked record again from its stored XML and write those "
            "whose result differs from the local record (no request to the provider); "
            "with identifiers: only those."
        )
    )
    errors_only = flag(_("With rewrite: only the records whose last attempt failed."))
    force = flag(_("Write the records the provider lists even where it did not change them."))
    retry_errors = flag(
        _("Ask the provider again (GetRecord) for every record whose last attempt failed.")
    )
    purge = flag(
        _(
            "Delete every local record that this harvester created (type its id in "
            "confirm). The records are harvested again by the next run."
        )
    )
    forget = flag(_("With purge: forget the tracked records too."))
    confirm = fields.String(
        load_default=None,
        allow_none=True,
        validate=validate.Length(max=64),
        metadata={"description": _("For a purge: the harvester's id, typed to confirm it.")},
    )

    # Text, not fields.UUID: invenio-administration's form renderer (the Jobs run form) has no
    # widget for a "uuid" field and would blank the page.
    undo = fields.String(
        load_default=None,
        allow_none=True,
        validate=validate.Regexp(
            r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$",
            error="Give the id of a run of this harvester (a UUID).",
        ),
        metadata={
            "description": _(
                "Take back what this earlier run of the harvester wrote (its id): records it "
                "created are deleted, records it changed or deleted return to before it."
            )
        },
    )

    @validates_schema
    def _one_kind_of_run(self, data: dict[str, Any], **kwargs: Any) -> None:
        kinds = [kind for kind in KINDS_OF_RUN if data.get(kind.value)]
        if kinds == [RunKind.IDENTIFIERS, RunKind.REWRITE]:
            kinds = [RunKind.REWRITE]  # a rewrite of some identifiers
        if len(kinds) > 1:
            names = " and ".join(field_reference(kind.value) for kind in kinds)
            raise ValidationError(
                f"One kind of run at a time: not {names} together.", field_name=kinds[-1].value
            )
        kind = kinds[0] if kinds else RunKind.HARVEST
        for option, allowed in OPTION_KINDS.items():
            if not data.get(option) or kind in allowed:
                continue
            if option == "force":
                raise ValidationError(
                    f"Only for a run that asks the provider, not with "
                    f"{field_reference(kind.value)}.",
                    field_name=option,
                )
            raise ValidationError(
                f"Only with {field_reference(allowed[0].value)}.", field_name=option
            )


RUN_ARGUMENT_NAMES = tuple(RunArgumentsSchema().fields)
"""Every argument a run takes, by its one name."""

TASK_ONLY_ARGUMENTS = ("harvester_id", "since_source", "write_mode", "job_arg_schema", "counts")
"""What the harvest task takes besides the run arguments (set by our code, not by people;
``counts``: what a run counted, which it keeps in its arguments and a copy of them ignores)."""


def run_request(arguments: Mapping[str, Any], *, without_since: SinceSource) -> RunRequest:
    """The request of run arguments as a surface sends them, checked by the one schema
    (ValidationError); `without_since` says where the window starts when no `since` is given
    (invenio-jobs: the last success; the command line and a preview: the watermark)."""
    loaded = _loaded(arguments)
    return RunRequest.from_arguments(loaded, since_source_of(loaded.get("since"), without_since))


def _loaded(arguments: Mapping[str, Any]) -> dict[str, Any]:
    given = dict(arguments)
    if isinstance(given.get("since"), datetime):
        given["since"] = given["since"].isoformat()
    return RunArgumentsSchema().load(given)


def check_task_arguments(arguments: Mapping[str, Any]) -> None:
    """ValidationError unless `arguments` are run arguments that pass the one schema.

    For what reaches the harvest task without the schema: invenio-jobs' custom arguments
    ("for seasoned administrators") are handed to the task as they were typed.
    """
    task_run_request(arguments)


def task_run_request(arguments: Mapping[str, Any]) -> RunRequest:
    """The request of the harvest task's arguments (those of a run of invenio-jobs: the run
    arguments and what our code adds, `since_source` above all), checked by the one schema."""
    unknown = sorted(set(arguments) - set(RUN_ARGUMENT_NAMES) - set(TASK_ONLY_ARGUMENTS))
    if unknown:
        raise ValidationError({name: ["Not a run argument."] for name in unknown})
    given = {name: arguments[name] for name in RUN_ARGUMENT_NAMES if name in arguments}
    # invenio-jobs' `since` (the last success) stays automatic: only then may the window
    # reach back to the watermark.
    source = SinceSource(arguments.get("since_source") or SinceSource.LAST_SUCCESS.value)
    return RunRequest.from_arguments(_loaded(given), source)


KINDS_OF_RUN = tuple(kind for kind in RunKind if kind is not RunKind.HARVEST)
"""Kinds of run asked for by an argument of their name: at most one of them per run."""
