-- What every run asks first (harvest/tracking.py, not_indexed_records): the rows whose record
-- an earlier run wrote but did not get into the search index, on one harvester's 200,000
-- tracking rows (2 kB of stored XML each) of which none, or 100, say "Not indexed":
--
--   psql -h 127.0.0.1 -U postgres -c "CREATE DATABASE oaiharvest_doiscan"
--   psql -h 127.0.0.1 -U postgres -d oaiharvest_doiscan -f benchmarks/not_indexed_scan.sql
--
-- The table is oai_harvested_record with its key and index (pg_dump -s of the test database).
DROP TABLE IF EXISTS oai_harvested_record;
CREATE TABLE oai_harvested_record (harvester_id varchar(64) NOT NULL, oai_identifier varchar(1024) NOT NULL, datestamp varchar(64), deleted boolean NOT NULL, local_pid varchar(255), errors jsonb, warnings jsonb, original_xml text, transformed jsonb, harvested_at timestamptz NOT NULL, run_id uuid, attempts integer NOT NULL, next_attempt_at timestamptz, purged boolean NOT NULL, adopted boolean NOT NULL, PRIMARY KEY (harvester_id, oai_identifier));
CREATE INDEX ix_oai_harvested_record_local_pid ON oai_harvested_record (local_pid);
INSERT INTO oai_harvested_record
  SELECT 'big', 'oai:example.org:' || lpad(g::text, 7, '0'), '2024-06-01T12:00:00Z', false,
         'rec-' || g, NULL, NULL, repeat(md5(g::text), 64), jsonb_build_object('title', md5(g::text)),
         now(), NULL, 0, NULL, false, false
  FROM generate_series(1, 200000) g;
ANALYZE oai_harvested_record;
\timing on
-- the first page of the keyset query, as SQLAlchemy sends it (batch size 100)
EXPLAIN ANALYZE SELECT oai_identifier, local_pid FROM oai_harvested_record
  WHERE harvester_id = 'big' AND local_pid IS NOT NULL AND CAST(errors AS TEXT) LIKE '%Not indexed:%'
    AND oai_identifier > '' ORDER BY oai_identifier LIMIT 100;
UPDATE oai_harvested_record SET errors = '["Not indexed: pending"]'
  WHERE oai_identifier IN (SELECT oai_identifier FROM oai_harvested_record ORDER BY random() LIMIT 100);
EXPLAIN ANALYZE SELECT oai_identifier, local_pid FROM oai_harvested_record
  WHERE harvester_id = 'big' AND local_pid IS NOT NULL AND CAST(errors AS TEXT) LIKE '%Not indexed:%'
    AND oai_identifier > '' ORDER BY oai_identifier LIMIT 100;
