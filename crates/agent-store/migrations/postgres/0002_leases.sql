-- A run's lease (milliseconds since the Unix epoch): until when its process, on another host
-- sharing the store, is taken for alive without renewing it. NULL: no lease.
ALTER TABLE runs ADD COLUMN lease_until BIGINT;
