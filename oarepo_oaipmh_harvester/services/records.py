"""The harvested-record service: what each harvester last saw of each OAI identifier."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from flask import current_app
from invenio_access.permissions import system_identity
from invenio_db import db
from invenio_records_resources.proxies import current_service_registry
from invenio_records_resources.services.base import LinksTemplate
from invenio_records_resources.services.records.schema import ServiceSchemaWrapper

from ..harvest.counts import EXAMPLES_PER_REASON, MAX_REASONS, FailureGroup, failure_reason
from ..models import OAIHarvestedRecord, OAIHarvester
from ..text import echoed, is_storable
from .base import SQLService
from .errors import (
    HarvestedRecordNotFound,
    HarvesterNotFound,
    HarvesterValidationError,
    kind_of_value,
)
from .results import SQLItem, SQLList, SQLPage
from .sql import (
    contains_all_words,
    fetch_page,
    first_value,
    query_words,
    resolve_search_params,
)

log = logging.getLogger(__name__)

TRUE_VALUES = ("true", "1", "yes", "on")
FALSE_VALUES = ("false", "0", "no", "off")


@dataclass
class HarvestedRecordView:
    """What the schema and the links see of a tracking row."""

    model: OAIHarvestedRecord
    local_links: dict[str, str] = field(default_factory=dict)

    @property
    def id(self) -> str:
        """``<harvester>/<OAI identifier>``: the path of the record under the records API."""
        return f"{self.model.harvester_id}/{self.model.oai_identifier}"

    @property
    def has_errors(self) -> bool:
        return bool(self.model.errors)

    @property
    def has_warnings(self) -> bool:
        return bool(self.warnings)

    @property
    def has_conflicts(self) -> bool:
        return bool(self.model.conflicts)

    @property
    def errors(self) -> list[str]:
        return list(self.model.errors or [])

    @property
    def warnings(self) -> list[str]:
        # The column came with the reconciliation work; tolerate rows of an older schema.
        return list(getattr(self.model, "warnings", None) or [])

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)


def _boolean(name: str, values: list[str]) -> bool | None:
    """One boolean filter from its (multi-valued) query argument; both values selected = no filter."""
    wanted = set()
    for value in values:
        text = str(value).strip().lower()
        if text in TRUE_VALUES:
            wanted.add(True)
        elif text in FALSE_VALUES:
            wanted.add(False)
        else:
            raise HarvesterValidationError({name: [f"Use true or false, not {echoed(value)}."]})
    return wanted.pop() if len(wanted) == 1 else None


def _values(params: dict[str, Any], name: str) -> list[Any]:
    """A filter's values from the declared arguments or the collected facets."""
    value = params.get(name)
    if value is None:
        value = (params.get("facets") or {}).get(name)
    if value is None:
        return []
    return [v for v in (value if isinstance(value, list | tuple) else [value]) if v != ""]


class HarvestedRecordService(SQLService):
    """Search and read tracking rows (SQL); re-harvest one record through a run.

    Search arguments: ``q`` (words in the OAI identifier or the local pid), ``harvester``
    (repeatable), ``deleted``, ``has_errors`` and ``has_warnings`` (true/false), ``error`` (text in an error
    message), ``datestamp_from`` and ``datestamp_until`` (inclusive, compared as the provider
    wrote them: ISO dates sort as text), ``run`` (a run id), ``sort``, ``page``, ``size``.
    """

    def __init__(self, config: Any, harvester_service: Any, runs_service: Any) -> None:
        super().__init__(config)
        self._list_schema = ServiceSchemaWrapper(self, schema=config.list_schema)
        self.harvester_service = harvester_service
        self.runs_service = runs_service

    # -- reading ---------------------------------------------------------------------------
    def _get(
        self, identity: Any, harvester_id: str, oai_identifier: str, action: str = "read"
    ) -> OAIHarvestedRecord:
        """The tracking row, with the same 403/404 rules as harvesters."""
        self.require_permission(identity, "use")
        if not (is_storable(harvester_id) and is_storable(oai_identifier)):
            raise HarvestedRecordNotFound(harvester_id, oai_identifier)
        harvester = db.session.get(OAIHarvester, harvester_id)
        if harvester is None or not self.check_permission(identity, "read", harvester=harvester):
            raise HarvestedRecordNotFound(harvester_id, oai_identifier)
        if action != "read":
            self.require_permission(identity, action, harvester=harvester)
        row = db.session.get(OAIHarvestedRecord, (harvester_id, oai_identifier))
        if row is None:
            raise HarvestedRecordNotFound(harvester_id, oai_identifier)
        return row

    def read(self, identity: Any, harvester_id: str, oai_identifier: str) -> SQLItem:
        """One record: original XML, transformed data, errors, links to the local record and run."""
        row = self._get(identity, harvester_id, oai_identifier)
        view = HarvestedRecordView(row, local_links=self.local_record_links(row, resolve=True))
        return self.result_item(self, identity, view, links_tpl=self.links_item_tpl)

    def local_record_links(self, row: OAIHarvestedRecord, *, resolve: bool) -> dict[str, str]:
        """Links to the local record a tracking row points at.

        With `resolve`, the target service's own links are used (one read of the record).
        Otherwise, or when the target gives none, ``OAI_HARVESTER_LOCAL_RECORD_URLS`` (per
        target service id: ``{"self": ..., "self_html": ...}`` with ``{api}``, ``{ui}``,
        ``{pid}``), else ``<SITE_API_URL>/<target service id>/<pid>``: a best effort.
        """
        if not row.local_pid or row.deleted:
            return {}
        harvester = db.session.get(OAIHarvester, row.harvester_id)
        target = harvester.target if harvester else None
        links: dict[str, str] = {}
        if resolve and target:
            try:
                service = current_service_registry.get(target)
                item = service.read(system_identity, row.local_pid)
                links = {k: v for k, v in item.links.items() if k in ("self", "self_html")}
            except Exception as error:  # a gone or unreadable record still gets a fallback
                log.debug("No links from %s for %s: %s", target, row.local_pid, error)
        config = current_app.config
        values = {
            "api": config.get("SITE_API_URL", "/api").rstrip("/"),
            "ui": config.get("SITE_UI_URL", "").rstrip("/"),
            "pid": row.local_pid,
            "service_id": target or "",
        }
        templates = (config.get("OAI_HARVESTER_LOCAL_RECORD_URLS") or {}).get(target) or {}
        for name, template in templates.items():
            links.setdefault(name, template.format(**values))
        if "self" not in links and target:
            links["self"] = "{api}/{service_id}/{pid}".format(**values)
        return links

    def search(self, identity: Any, params: dict | None = None, **kwargs: Any) -> SQLList:
        """Tracking rows of the harvesters `identity` may see, with facet counts."""
        self.require_permission(identity, "search")
        options = self.config.search
        params = resolve_search_params(options, params)
        base = self._filtered(identity, params)
        selected = self._facet_filters(params)
        rows, total = fetch_page(
            db.select(OAIHarvestedRecord).where(base, *selected.values()),
            OAIHarvestedRecord,
            options,
            params,
        )
        # As in Invenio searches, facet counts ignore the facet selections themselves.
        aggregations = self._aggregations(base, params)
        return self.result_list(
            self,
            identity,
            SQLPage(rows=rows, total=total, aggregations=aggregations),
            params=params,
            links_tpl=LinksTemplate(
                self.config.links_search, context={"args": _search_link_args(params)}
            ),
            links_item_tpl=self.links_item_tpl,
            schema=self._list_schema,
            prepare=lambda row: HarvestedRecordView(
                row, local_links=self.local_record_links(row, resolve=False)
            ),
        )

    def tracked_records(
        self,
        identity: Any,
        harvester_id: str,
        *,
        errors_only: bool = False,
        with_warnings: bool = False,
        with_conflicts: bool = False,
    ) -> Iterator[OAIHarvestedRecord]:
        """The tracking rows of a harvester, by identifier (streamed, for the command line):
        all, or those whose last attempt failed (`errors_only`), left warnings
        (`with_warnings`), or whose last write met a local edit (`with_conflicts`); those
        asked for together, each row meets all.

        The harvester is looked up now, not when the rows are first read: an unknown id is
        HarvesterNotFound here, where the caller handles it.
        """
        self.harvester_service.get_harvester(identity, harvester_id)
        query = (
            db.select(OAIHarvestedRecord)
            .where(OAIHarvestedRecord.harvester_id == harvester_id)
            .order_by(OAIHarvestedRecord.oai_identifier)
        )
        for wanted, column in (
            (errors_only, OAIHarvestedRecord.errors),
            (with_warnings, OAIHarvestedRecord.warnings),
            (with_conflicts, OAIHarvestedRecord.conflicts),
        ):
            if wanted:
                query = query.where(column.is_not(None))
        return iter(db.session.scalars(query.execution_options(yield_per=1000)))

    def _filtered(self, identity: Any, params: dict[str, Any]) -> Any:
        """The conditions that are not facets: visibility, query string, error text, dates."""
        conditions = []
        visible = self.harvester_service.visible_harvester_ids(identity)
        if visible is not None:
            conditions.append(OAIHarvestedRecord.harvester_id.in_(visible))
        words = query_words(params["q"])
        if words:
            conditions.append(
                contains_all_words(
                    [OAIHarvestedRecord.oai_identifier, OAIHarvestedRecord.local_pid], words
                )
            )
        error_text = first_value(params.get("error") or (params.get("facets") or {}).get("error"))
        if error_text:
            conditions.append(
                contains_all_words([sa.cast(OAIHarvestedRecord.errors, sa.Text)], [error_text])
            )
        for name, compare in (
            ("datestamp_from", lambda column, value: column >= value),
            ("datestamp_until", lambda column, value: column <= value),
        ):
            value = first_value(_values(params, name))
            if value:
                conditions.append(compare(OAIHarvestedRecord.datestamp, _datestamp(name, value)))
        run = first_value(_values(params, "run"))
        if run:
            try:
                conditions.append(OAIHarvestedRecord.run_id == uuid.UUID(str(run)))
            except ValueError:
                raise HarvesterValidationError({"run": ["Not a valid run id."]}) from None
        return sa.and_(sa.true(), *conditions)

    def _facet_filters(self, params: dict[str, Any]) -> dict[str, Any]:
        filters = {}
        harvesters = [str(v) for v in _values(params, "harvester")]
        if harvesters:
            filters["harvester"] = OAIHarvestedRecord.harvester_id.in_(harvesters)
        deleted = _boolean("deleted", _values(params, "deleted"))
        if deleted is not None:
            filters["deleted"] = OAIHarvestedRecord.deleted.is_(deleted)
        for name, column in (
            ("has_errors", OAIHarvestedRecord.errors),
            ("has_warnings", OAIHarvestedRecord.warnings),
            ("has_conflicts", OAIHarvestedRecord.conflicts),
        ):
            wanted = _boolean(name, _values(params, name))
            if wanted is not None:
                filters[name] = column.is_not(None) if wanted else column.is_(None)
        return filters

    def _aggregations(self, base: Any, params: dict[str, Any]) -> dict[str, Any]:
        labels = self.config.search.facets
        names = dict(db.session.execute(db.select(OAIHarvester.id, OAIHarvester.name)).all())
        selected = {
            "harvester": {str(v) for v in _values(params, "harvester")},
            "deleted": {str(v).lower() for v in _values(params, "deleted")},
            "has_errors": {str(v).lower() for v in _values(params, "has_errors")},
            "has_warnings": {str(v).lower() for v in _values(params, "has_warnings")},
            "has_conflicts": {str(v).lower() for v in _values(params, "has_conflicts")},
        }
        columns = {
            "harvester": OAIHarvestedRecord.harvester_id,
            "deleted": OAIHarvestedRecord.deleted,
            "has_errors": sa.case((OAIHarvestedRecord.errors.is_not(None), True), else_=False),
            "has_warnings": sa.case((OAIHarvestedRecord.warnings.is_not(None), True), else_=False),
            "has_conflicts": sa.case(
                (OAIHarvestedRecord.conflicts.is_not(None), True), else_=False
            ),
        }
        aggregations = {}
        for name, column in columns.items():
            counts = db.session.execute(
                db.select(column, sa.func.count()).where(base).group_by(column)
            ).all()
            buckets = []
            for value, count in sorted(counts, key=lambda pair: (-pair[1], str(pair[0]))):
                key = str(value).lower() if isinstance(value, bool) else str(value)
                label = names.get(value, key) if name == "harvester" else _yes_no(value)
                buckets.append(
                    {
                        "key": key,
                        "doc_count": count,
                        "label": label,
                        "is_selected": key in selected[name],
                    }
                )
            aggregations[name] = {"buckets": buckets, "label": str(labels[name]["label"])}
        return aggregations

    # -- actions ---------------------------------------------------------------------------
    def error_reasons(
        self, identity: Any, harvester_id: str, limit: int = 10
    ) -> list[FailureGroup]:
        """The reasons the harvester's records are failing now (their last error), the most
        frequent first, each with its count and a few identifiers."""
        self.harvester_service.get_harvester(identity, harvester_id)
        first_error = OAIHarvestedRecord.errors[0].as_string()
        mine = OAIHarvestedRecord.harvester_id == harvester_id
        rows = db.session.execute(
            db.select(first_error, sa.func.count())
            .where(mine, OAIHarvestedRecord.errors.is_not(None))
            .group_by(first_error)
            .order_by(sa.func.count().desc())
            .limit(MAX_REASONS)
        ).all()
        groups: dict[str, FailureGroup] = {}
        examples_of: dict[str, list[str]] = {}
        for error, count in rows:
            reason = failure_reason(error or "")
            groups.setdefault(reason, FailureGroup(reason)).count += count
            examples_of.setdefault(reason, []).append(error or "")
        ranked = sorted(groups.values(), key=lambda group: -group.count)[:limit]
        for group in ranked:
            for error in examples_of[group.reason]:
                room = EXAMPLES_PER_REASON - len(group.examples)
                if room <= 0:
                    break
                group.examples.extend(
                    db.session.scalars(
                        db.select(OAIHarvestedRecord.oai_identifier)
                        .where(mine, first_error == error)
                        .order_by(OAIHarvestedRecord.oai_identifier)
                        .limit(room)
                    )
                )
        return ranked

    def reharvest(
        self, identity: Any, harvester_id: str, oai_identifier: str, data: Any = None
    ) -> SQLItem:
        """Fetch this one record again now (GetRecord), as a run of the harvester's job.

        It takes no arguments: `data` (a REST body) may only be None or empty."""
        self._get(identity, harvester_id, oai_identifier, "reharvest")
        if data is not None:
            if not isinstance(data, dict):
                raise HarvesterValidationError(
                    {
                        "_schema": [
                            "A re-harvest takes no arguments: send no body or an empty JSON "
                            f"object, not {kind_of_value(data)}."
                        ]
                    }
                )
            if data:
                raise HarvesterValidationError(
                    {name: ["A re-harvest takes no arguments."] for name in data}
                )
        try:
            return self.runs_service.start_run(
                identity,
                harvester_id,
                {"identifiers": [oai_identifier]},
                title=f"Re-harvest {oai_identifier}"[:250],
            )
        except HarvesterNotFound:
            raise HarvestedRecordNotFound(harvester_id, oai_identifier) from None


def _datestamp(name: str, value: str) -> str:
    """A datestamp bound, checked to be an ISO date or datetime (compared as text)."""
    text = str(value).strip()
    try:
        datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise HarvesterValidationError(
            {
                name: [
                    "Use an ISO 8601 date or date and time, e.g. 2024-01-31 or 2024-01-31T12:00:00Z."
                ]
            }
        ) from None
    return text


def _yes_no(value: Any) -> str:
    return "Yes" if value else "No"


def _search_link_args(params: dict[str, Any]) -> dict[str, Any]:
    args = {k: v for k, v in params.items() if k != "facets" and v not in (None, "", [], {})}
    for name, values in (params.get("facets") or {}).items():
        args.setdefault(name, values)
    return args
