-- What InvenioRDM's publish reads by parent_id, and what a read costs as the site grows.
-- Run on the database a benchmark kept, right after its harvest:
--
--   SQLALCHEMY_DATABASE_URI=postgresql+psycopg2://postgres@127.0.0.1:5432/oaiharvest_bench \
--     ./run.sh bench --phases rdm_workers --rdm-records 1000 --rdm-worker-counts 2 \
--     --quiet-wait 0 --keep-db
--   psql -h 127.0.0.1 -U postgres -d oaiharvest_bench -f benchmarks/parent_lookup.sql
--
-- 1. Sequential scans during the harvest (invenio-rdm-records has no index on parent_id).
SELECT relname, n_live_tup, seq_scan, seq_tup_read, idx_scan
  FROM pg_stat_user_tables WHERE relname IN ('rdm_records_metadata', 'rdm_drafts_metadata')
  ORDER BY relname;
-- 2. The records table grown to 200,000 rows (copies of the harvested ones), then one
--    look-up of a parent's versions, as ParentRecordCommitOp and the publish make it.
\timing on
INSERT INTO rdm_records_metadata (deletion_status, id, json, version_id, created, updated, index, parent_id)
  SELECT r.deletion_status, gen_random_uuid(), r.json, 1, r.created, r.updated, 1, r.parent_id
  FROM rdm_records_metadata r, generate_series(1, 199);
ANALYZE rdm_records_metadata;
SELECT count(*) AS records, pg_size_pretty(pg_relation_size('rdm_records_metadata')) AS heap
  FROM rdm_records_metadata;
SELECT id FROM rdm_records_metadata WHERE parent_id = '00000000-0000-0000-0000-000000000001';
SELECT id FROM rdm_records_metadata WHERE parent_id = '00000000-0000-0000-0000-000000000001';
SELECT id FROM rdm_records_metadata WHERE parent_id = '00000000-0000-0000-0000-000000000001';
EXPLAIN (ANALYZE, BUFFERS)
  SELECT id FROM rdm_records_metadata WHERE parent_id = '00000000-0000-0000-0000-000000000001';
-- 3. The same with the index the run log asks for.
CREATE INDEX ix_rdm_records_metadata_parent_id ON rdm_records_metadata (parent_id);
SELECT id FROM rdm_records_metadata WHERE parent_id = '00000000-0000-0000-0000-000000000001';
SELECT id FROM rdm_records_metadata WHERE parent_id = '00000000-0000-0000-0000-000000000001';
EXPLAIN (ANALYZE, BUFFERS)
  SELECT id FROM rdm_records_metadata WHERE parent_id = '00000000-0000-0000-0000-000000000001';
