"""Service of the sample target."""

from invenio_records_permissions.generators import AnyUser, SystemProcess
from invenio_records_permissions.policies.records import RecordPermissionPolicy
from invenio_records_resources.services import RecordService, RecordServiceConfig
from invenio_records_resources.services.base.config import ConfiguratorMixin
from invenio_records_resources.services.records.schema import BaseRecordSchema
from marshmallow import ValidationError, fields, validates_schema

from . import SAMPLE_SERVICE_ID
from .records import SampleRecord


class SampleRecordSchema(BaseRecordSchema):
    """Accepts the oai_dc transformer's output; a record needs a title."""

    metadata = fields.Dict(required=True)

    @validates_schema
    def _require_title(self, data, **kwargs):
        titles = (data.get("metadata") or {}).get("title")
        if not titles or not all(isinstance(title, str) and title.strip() for title in titles):
            raise ValidationError("A record needs a non-empty title.", "metadata")


class SamplePermissionPolicy(RecordPermissionPolicy):
    """Anyone reads; only the system (the harvester) writes."""

    can_search = [AnyUser(), SystemProcess()]
    can_read = [AnyUser(), SystemProcess()]
    can_create = [SystemProcess()]
    can_update = [SystemProcess()]
    can_delete = [SystemProcess()]
    can_create_or_update_many = [SystemProcess()]


class SampleServiceConfig(RecordServiceConfig, ConfiguratorMixin):
    """Configuration of the sample service."""

    service_id = SAMPLE_SERVICE_ID
    indexer_queue_name = SAMPLE_SERVICE_ID
    record_cls = SampleRecord
    schema = SampleRecordSchema
    permission_policy_cls = SamplePermissionPolicy


class SampleRecordService(RecordService):
    """The sample target service."""
