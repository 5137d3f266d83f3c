-- Who holds a DOI, case aside (harvest/targets/drafts.py, doi_holders), on 200,000 records'
-- PIDs, before and after the index of migration 1764410006 (models.DOI_HOLDER_INDEX):
--
--   psql -h 127.0.0.1 -U postgres -c "CREATE DATABASE oaiharvest_doiscan"
--   psql -h 127.0.0.1 -U postgres -d oaiharvest_doiscan -f benchmarks/doi_holder_lookup.sql
--
-- The table is invenio-pidstore's pidstore_pid with its indices; four PIDs a record (an RDM
-- record has more). Each new record of a first harvest asks this once, with no holder.
DROP TABLE IF EXISTS pidstore_pid;
CREATE TABLE pidstore_pid (id serial primary key, pid_type varchar(6) not null, pid_value varchar(255) not null, status char(1) not null default 'R', object_type varchar(3), object_uuid uuid, created timestamp not null default now(), updated timestamp not null default now());
CREATE UNIQUE INDEX uidx_type_pid ON pidstore_pid (pid_type, pid_value);
CREATE INDEX idx_object ON pidstore_pid (object_type, object_uuid);
INSERT INTO pidstore_pid (pid_type, pid_value, object_type, object_uuid)
  SELECT t, t || '-' || g || CASE WHEN t='doi' THEN '/Example.' || g ELSE '' END, 'rec', md5(g::text)::uuid
  FROM generate_series(1, 200000) g, unnest(ARRAY['recid','doi','oai','recid','doi','oai','lrecid','rdm']) WITH ORDINALITY u(t, n) WHERE n IN (1,2,3,7);
ANALYZE pidstore_pid;
SELECT pid_type, count(*) FROM pidstore_pid GROUP BY 1;
\timing on
EXPLAIN ANALYZE SELECT * FROM pidstore_pid WHERE pid_type='doi' AND lower(pid_value)='10.9999/none' ORDER BY created LIMIT 1;
SELECT * FROM pidstore_pid WHERE pid_type='doi' AND lower(pid_value)='10.9999/none' ORDER BY created LIMIT 1;
SELECT * FROM pidstore_pid WHERE pid_type='doi' AND lower(pid_value)='10.9999/none' ORDER BY created LIMIT 1;
CREATE INDEX ix_oai_harvester_pidstore_pid_lower_value ON pidstore_pid (pid_type, lower(pid_value));
ANALYZE pidstore_pid;
EXPLAIN ANALYZE SELECT * FROM pidstore_pid WHERE pid_type='doi' AND lower(pid_value)='10.9999/none' ORDER BY created LIMIT 1;
SELECT * FROM pidstore_pid WHERE pid_type='doi' AND lower(pid_value)='10.9999/none' ORDER BY created LIMIT 1;
