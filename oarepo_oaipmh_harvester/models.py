"""Database models: harvesters and the records they track."""

from __future__ import annotations

import sqlalchemy as sa
from invenio_db import db
from invenio_pidstore.models import PersistentIdentifier
from sqlalchemy.dialects import postgresql
from sqlalchemy_utils.types import UUIDType

# JSONB on PostgreSQL (indexable, compact), plain JSON elsewhere.
JSONType = db.JSON(none_as_null=True).with_variant(
    postgresql.JSONB(none_as_null=True), "postgresql"
)


class OAIHarvester(db.Model, db.Timestamp):
    """A remote OAI-PMH data provider and how its records land in a local service."""

    __tablename__ = "oai_harvester"

    id = db.Column(db.String(64), primary_key=True)
    name = db.Column(db.String(255), nullable=False)
    comment = db.Column(db.Text, nullable=True)
    base_url = db.Column(db.String(2048), nullable=False)
    metadata_prefix = db.Column(db.String(255), nullable=False)
    setspecs = db.Column(JSONType, nullable=False, default=list)
    target = db.Column(db.String(255), nullable=False)
    transformer = db.Column(db.String(255), nullable=False)
    batch_size = db.Column(db.Integer, nullable=False)
    harvest_managers = db.Column(JSONType, nullable=False, default=list)
    # Seconds between two requests to this provider; None uses OAI_HARVESTER_REQUEST_DELAY.
    request_delay = db.Column(db.Float, nullable=True)
    # responseDate (server clock) at the start of the last run that finished without a
    # failed record: the next window may start there even if our clock is ahead.
    watermark = db.Column(db.UTCDateTime, nullable=True)
    # The watermark of each scope (endpoint, metadata prefix, set) it was earned on, as
    # {scope key: ISO datetime}: a scope that is not here is harvested in full.
    watermarks = db.Column(JSONType, nullable=True)
    # How records are written into the target (see harvest/targets): the user who owns
    # them (None: the system), the community they join (draft-enabled targets with
    # communities), and the policies of harvest/targets/drafts.py. The choices are the
    # values of TargetOptions' enums; the columns are plain strings so that a policy
    # added later needs no migration of an enum type.
    owner = db.Column(db.Integer, nullable=True)
    community = db.Column(db.String(255), nullable=True)
    target_adapter = db.Column(db.String(32), nullable=False, default="auto")
    local_drafts = db.Column(db.String(32), nullable=False, default="harvest-wins")
    invalid_drafts = db.Column(db.String(32), nullable=False, default="discard")
    doi_conflicts = db.Column(db.String(32), nullable=False, default="fail")
    # Communities a record joins by the OAI sets it is in, {set spec: community}, besides
    # `community` (draft-enabled targets with communities).
    set_communities = db.Column(JSONType, nullable=True)
    # What an InvenioRDM transformer makes of a record that names no creator ("fail",
    # "contributors", "holder" or a fixed name); None: the transformer's configured default.
    missing_creator = db.Column(db.String(255), nullable=True)
    # Why `metadata_prefix` was picked when the operator named none (the provider's formats
    # and OAI_HARVESTER_PREFERRED_PREFIXES); None: the operator named it.
    metadata_prefix_choice = db.Column(db.Text, nullable=True)
    # A record's files: "none" (metadata only), "link" (their URLs on the record) or "copy"
    # (fetched into the site's storage); what fails, how a change is written, the bytes a
    # file may have (None: OAI_HARVESTER_FILES_MAX_SIZE), the hosts files may come from
    # besides the provider's, and whether files the source marks restricted are fetched.
    files = db.Column(db.String(32), nullable=False, default="none")
    files_failure = db.Column(db.String(32), nullable=False, default="metadata-only")
    files_changes = db.Column(db.String(32), nullable=False, default="new-version")
    files_max_size = db.Column(db.BigInteger, nullable=True)
    files_hosts = db.Column(JSONType, nullable=True)
    files_restricted = db.Column(db.Boolean, nullable=False, default=False)
    # Percent of the live records one run may delete before its deletions are held
    # (harvest/deletion_guard.py); 0: no guard; None: OAI_HARVESTER_DELETION_GUARD.
    deletion_guard = db.Column(db.Float, nullable=True)
    # Identifier schemes a new record is matched to an untracked local one by, in order
    # (harvest/targets/matching.py); None: OAI_HARVESTER_MATCH_ON.
    match_on = db.Column(JSONType, nullable=True)
    # Metadata path -> source | local | merge: what a harvest does to a field a local user
    # changed (harvest/field_policy.py); None: the source overwrites every field.
    field_policy = db.Column(JSONType, nullable=True)
    # off | link | merge: one local record for a work another harvester brought already
    # (harvest/targets/shared.py).
    dedupe = db.Column(db.String(32), nullable=False, default="off")
    # A paused harvester is left out of the run-all job (its own job still runs if asked).
    active = db.Column(db.Boolean, nullable=False, default=True)
    # HTTP Basic credentials and request headers for the provider, encrypted with a key
    # derived from SECRET_KEY (oarepo_oaipmh_harvester.credentials); None: none.
    credentials = db.Column(db.Text, nullable=True)


class OAIHarvestedRecord(db.Model):
    """What the harvester last saw of one OAI identifier, and where it landed locally."""

    __tablename__ = "oai_harvested_record"

    harvester_id = db.Column(
        db.String(64),
        db.ForeignKey(OAIHarvester.id, ondelete="CASCADE"),
        primary_key=True,
    )
    oai_identifier = db.Column(db.String(1024), primary_key=True)
    datestamp = db.Column(db.String(64), nullable=True)
    deleted = db.Column(db.Boolean, nullable=False, default=False)
    local_pid = db.Column(db.String(255), nullable=True)
    errors = db.Column(JSONType, nullable=True)
    # Problems that did not stop the record (malformed datestamp, characters XML forbids).
    warnings = db.Column(JSONType, nullable=True)
    original_xml = db.Column(db.Text, nullable=True)
    transformed = db.Column(JSONType, nullable=True)
    harvested_at = db.Column(db.UTCDateTime, nullable=False)
    # invenio-jobs run that touched the row last; no foreign key, runs may be purged.
    run_id = db.Column(UUIDType, nullable=True)
    # Consecutive failed attempts, and when the record may be asked for again (retries of
    # failed records at the end of later runs back off).
    attempts = db.Column(db.Integer, nullable=False, default=0)
    next_attempt_at = db.Column(db.UTCDateTime, nullable=True)
    # The local record was removed by a purge of the harvester: the next harvest recreates it.
    purged = db.Column(db.Boolean, nullable=False, default=False)
    # The local record was not created by the harvester but taken over (a DOI it held):
    # a purge leaves it alone.
    adopted = db.Column(db.Boolean, nullable=False, default=False)
    # The record's files as the last write left them: one object a file (key, url, size,
    # checksum, etag, last_modified, status, error); None: the harvester keeps no files.
    files = db.Column(JSONType, nullable=True)
    # A deletion that waits (harvest/deletion_guard.py): "pending" (within a run), "held" (for
    # an operator to confirm or reject), "rejected" (dropped); None: none.
    held_deletion = db.Column(db.String(16), nullable=True)
    # Fields that both the source and a local user changed at the last write, and what the
    # harvester's field policy kept (harvest/field_policy.py); None: none.
    conflicts = db.Column(JSONType, nullable=True)
    # The local record is another harvester's, which brought the same work first (dedupe
    # link or merge): this row's source is linked to it, not written as its metadata.
    linked = db.Column(db.Boolean, nullable=False, default=False)

    # local_pid alone: an index led by harvester_id tempts the planner, before the table has
    # statistics, to scan a harvester's whole range for each batch's identifier look-up.
    __table_args__ = (db.Index("ix_oai_harvested_record_local_pid", "local_pid"),)


class OAIRunJournal(db.Model):
    """One run of a harvester as its undo needs it: where the watermark was before the run,
    and whether the run is an undo or has been undone (harvest/journal.py)."""

    __tablename__ = "oai_harvester_run_journal"

    run_id = db.Column(UUIDType, primary_key=True)
    harvester_id = db.Column(
        db.String(64), db.ForeignKey(OAIHarvester.id, ondelete="CASCADE"), nullable=False
    )
    started_at = db.Column(db.UTCDateTime, nullable=False)
    watermark = db.Column(db.UTCDateTime, nullable=True)
    watermarks = db.Column(JSONType, nullable=True)
    # The run this one undid; the run that undid this one (None: its result stands).
    undo_of = db.Column(UUIDType, nullable=True)
    undone_by = db.Column(UUIDType, nullable=True)

    __table_args__ = (db.Index("ix_oai_harvester_run_journal_harvester", "harvester_id"),)


class OAIRunChange(db.Model):
    """A tracking row as it was before a run first changed it (`existed` false: the run made
    it). ``kind`` "seen": the run only stamped the row as listed (its run id and held
    deletion are kept, nothing else)."""

    __tablename__ = "oai_harvester_run_change"

    run_id = db.Column(
        UUIDType,
        db.ForeignKey(OAIRunJournal.run_id, ondelete="CASCADE"),
        primary_key=True,
    )
    oai_identifier = db.Column(db.String(1024), primary_key=True)
    harvester_id = db.Column(db.String(64), nullable=False)
    kind = db.Column(db.String(16), nullable=False, default="written")
    existed = db.Column(db.Boolean, nullable=False)
    datestamp = db.Column(db.String(64), nullable=True)
    deleted = db.Column(db.Boolean, nullable=True)
    local_pid = db.Column(db.String(255), nullable=True)
    errors = db.Column(JSONType, nullable=True)
    warnings = db.Column(JSONType, nullable=True)
    original_xml = db.Column(db.Text, nullable=True)
    transformed = db.Column(JSONType, nullable=True)
    harvested_at = db.Column(db.UTCDateTime, nullable=True)
    previous_run_id = db.Column(UUIDType, nullable=True)
    attempts = db.Column(db.Integer, nullable=True)
    next_attempt_at = db.Column(db.UTCDateTime, nullable=True)
    purged = db.Column(db.Boolean, nullable=True)
    adopted = db.Column(db.Boolean, nullable=True)
    files = db.Column(JSONType, nullable=True)
    held_deletion = db.Column(db.String(16), nullable=True)
    conflicts = db.Column(JSONType, nullable=True)
    linked = db.Column(db.Boolean, nullable=True)

    # Which later runs touched an identifier (an undo leaves those records alone).
    __table_args__ = (
        db.Index("ix_oai_harvester_run_change_identifier", "harvester_id", "oai_identifier"),
    )


class OAIUnindexedRecord(db.Model):
    """A tracked record whose search document is not known to be in the index.

    Written in the transaction of the batch that writes the record, removed once the search
    index has taken its document. A run that dies between the two leaves it (the next run
    sends those documents first), and so does a document the index refused.
    """

    __tablename__ = "oai_harvester_unindexed"

    harvester_id = db.Column(db.String(64), primary_key=True)
    oai_identifier = db.Column(db.String(1024), primary_key=True)

    __table_args__ = (
        db.ForeignKeyConstraint(
            ["harvester_id", "oai_identifier"],
            [OAIHarvestedRecord.harvester_id, OAIHarvestedRecord.oai_identifier],
            ondelete="CASCADE",
        ),
    )


class OAIReleasedRecord(db.Model):
    """A local record whose harvester was deleted, kept for the harvester that comes next.

    Deleting a harvester leaves its local records in the target; without what it knew of
    them, a new harvester of the same provider would write every one of them again. A new
    harvester of the same provider, metadata prefix and target takes these rows over as
    its own tracking rows (services/released.py).
    """

    __tablename__ = "oai_harvester_released_record"

    released_from = db.Column(db.String(64), primary_key=True)
    oai_identifier = db.Column(db.String(1024), primary_key=True)
    base_url = db.Column(db.String(2048), nullable=False)
    metadata_prefix = db.Column(db.String(255), nullable=False)
    setspecs = db.Column(JSONType, nullable=False, default=list)
    target = db.Column(db.String(255), nullable=False)
    local_pid = db.Column(db.String(255), nullable=False)
    datestamp = db.Column(db.String(64), nullable=True)
    warnings = db.Column(JSONType, nullable=True)
    original_xml = db.Column(db.Text, nullable=True)
    transformed = db.Column(JSONType, nullable=True)
    harvested_at = db.Column(db.UTCDateTime, nullable=False)
    adopted = db.Column(db.Boolean, nullable=False, default=False)
    released_at = db.Column(db.UTCDateTime, nullable=False)

    __table_args__ = (
        db.Index("ix_oai_harvester_released_record_source", "target", "metadata_prefix"),
    )


# Who holds a harvested DOI is asked for each new record, and DOIs compare without regard to
# case (harvest/targets/drafts.py). invenio-pidstore indexes (pid_type, pid_value) only, so
# that look-up read every DOI of the site: a first harvest of N records read N**2 rows.
# Created with invenio-pidstore's table (and by migration 1764410006 where it exists), not
# declared on its model: invenio-db's naming-convention migration would take it for the
# model's unique index on the same columns and rename that one.
DOI_HOLDER_INDEX = "ix_oai_harvester_pidstore_pid_lower_value"
sa.event.listen(
    PersistentIdentifier.__table__,
    "after_create",
    sa.DDL(
        f"CREATE INDEX {DOI_HOLDER_INDEX} ON pidstore_pid (pid_type, lower(pid_value))"
    ).execute_if(dialect=("postgresql", "sqlite")),
)
