"""Model, record class and pid provider of the sample target."""

from invenio_db import db
from invenio_pidstore.providers.recordid_v2 import RecordIdProviderV2
from invenio_records.models import RecordMetadataBase
from invenio_records_resources.records.api import Record
from invenio_records_resources.records.systemfields import IndexField, PIDField


class SampleRecordMetadata(db.Model, RecordMetadataBase):
    """Database table of the sample records."""

    __tablename__ = "oai_sample_record_metadata"


class SampleRecordIdProvider(RecordIdProviderV2):
    """Own pid type, so that the sample never collides with a site's `recid` records."""

    pid_type = "oaismp"


class SampleRecord(Record):
    """A record holding whatever metadata the transformer produced."""

    model_cls = SampleRecordMetadata
    pid = PIDField("id", provider=SampleRecordIdProvider, create=True)
    index = IndexField("oaisamplerecords-sample-v1.0.0", search_alias="oaisamplerecords")
