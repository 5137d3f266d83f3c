"""What every service of SQL rows here shares with invenio-records-resources' record services."""

from __future__ import annotations

from typing import Any

from invenio_records_resources.services.base import LinksTemplate, Service
from invenio_records_resources.services.records.schema import ServiceSchemaWrapper


class SQLService(Service):
    """A service whose items are SQL rows: the item schema and item links that results and
    resources ask a record service for, without a search index behind them."""

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        self._schema = ServiceSchemaWrapper(self, schema=config.schema)

    @property
    def schema(self) -> ServiceSchemaWrapper:
        return self._schema

    @property
    def links_item_tpl(self) -> LinksTemplate:
        return LinksTemplate(self.config.links_item)
