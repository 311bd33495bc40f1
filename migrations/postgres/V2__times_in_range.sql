-- session-ledger schema on PostgreSQL, version 2: every time column holds a time of the one
-- text form (docs/storage-contract.md, C27), as audit.at already did.
--
-- A timestamptz also takes 'infinity', '-infinity' and years before 1 or after 9999, which
-- have no YYYY-MM-DDTHH:MM:SS.sssZ text: the library cannot read 'infinity' back at all, and
-- reads the others as times the SQLite engine could not store. The library never writes one;
-- these CHECKs refuse them from a hand edit too. Adding them reads each table once, to check
-- the rows already there: on a ledger that holds such a time the migration fails, naming the
-- constraint, and leaves nothing behind (every migration runs in one transaction).
--
-- This file has shipped once it is released: never edit it, add V3__*.sql instead.

ALTER TABLE sessions
    ADD CONSTRAINT sessions_created_at_in_range
        CHECK (created_at >= '0001-01-01 00:00:00+00' AND created_at < '10000-01-01 00:00:00+00'),
    ADD CONSTRAINT sessions_ended_at_in_range
        CHECK (ended_at >= '0001-01-01 00:00:00+00' AND ended_at < '10000-01-01 00:00:00+00');

ALTER TABLE labels
    ADD CONSTRAINT labels_materialized_at_in_range
        CHECK (materialized_at >= '0001-01-01 00:00:00+00' AND materialized_at < '10000-01-01 00:00:00+00'),
    ADD CONSTRAINT labels_raised_at_in_range
        CHECK (raised_at >= '0001-01-01 00:00:00+00' AND raised_at < '10000-01-01 00:00:00+00');

ALTER TABLE epochs
    ADD CONSTRAINT epochs_started_at_in_range
        CHECK (started_at >= '0001-01-01 00:00:00+00' AND started_at < '10000-01-01 00:00:00+00');

ALTER TABLE postures
    ADD CONSTRAINT postures_granted_at_in_range
        CHECK (granted_at >= '0001-01-01 00:00:00+00' AND granted_at < '10000-01-01 00:00:00+00'),
    ADD CONSTRAINT postures_allocated_at_in_range
        CHECK (allocated_at >= '0001-01-01 00:00:00+00' AND allocated_at < '10000-01-01 00:00:00+00');

ALTER TABLE command_patterns
    ADD CONSTRAINT command_patterns_added_at_in_range
        CHECK (added_at >= '0001-01-01 00:00:00+00' AND added_at < '10000-01-01 00:00:00+00');

ALTER TABLE override_scopes
    ADD CONSTRAINT override_scopes_granted_at_in_range
        CHECK (granted_at >= '0001-01-01 00:00:00+00' AND granted_at < '10000-01-01 00:00:00+00'),
    ADD CONSTRAINT override_scopes_expires_at_in_range
        CHECK (expires_at >= '0001-01-01 00:00:00+00' AND expires_at < '10000-01-01 00:00:00+00'),
    ADD CONSTRAINT override_scopes_revoked_at_in_range
        CHECK (revoked_at >= '0001-01-01 00:00:00+00' AND revoked_at < '10000-01-01 00:00:00+00');

COMMENT ON CONSTRAINT sessions_created_at_in_range ON sessions IS
    'session-ledger: C27, a time of the one text form: years 1 to 9999, never infinity';
COMMENT ON CONSTRAINT sessions_ended_at_in_range ON sessions IS
    'session-ledger: C27, a time of the one text form: years 1 to 9999, never infinity';
COMMENT ON CONSTRAINT labels_materialized_at_in_range ON labels IS
    'session-ledger: C27, a time of the one text form: years 1 to 9999, never infinity';
COMMENT ON CONSTRAINT labels_raised_at_in_range ON labels IS
    'session-ledger: C27, a time of the one text form: years 1 to 9999, never infinity';
COMMENT ON CONSTRAINT epochs_started_at_in_range ON epochs IS
    'session-ledger: C27, a time of the one text form: years 1 to 9999, never infinity';
COMMENT ON CONSTRAINT postures_granted_at_in_range ON postures IS
    'session-ledger: C27, a time of the one text form: years 1 to 9999, never infinity';
COMMENT ON CONSTRAINT postures_allocated_at_in_range ON postures IS
    'session-ledger: C27, a time of the one text form: years 1 to 9999, never infinity';
COMMENT ON CONSTRAINT command_patterns_added_at_in_range ON command_patterns IS
    'session-ledger: C27, a time of the one text form: years 1 to 9999, never infinity';
COMMENT ON CONSTRAINT override_scopes_granted_at_in_range ON override_scopes IS
    'session-ledger: C27, a time of the one text form: years 1 to 9999, never infinity';
COMMENT ON CONSTRAINT override_scopes_expires_at_in_range ON override_scopes IS
    'session-ledger: C27, a time of the one text form: years 1 to 9999, never infinity';
COMMENT ON CONSTRAINT override_scopes_revoked_at_in_range ON override_scopes IS
    'session-ledger: C27, a time of the one text form: years 1 to 9999, never infinity';
