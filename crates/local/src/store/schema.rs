//! The schema, as versioned migrations tracked by `PRAGMA user_version`.
//!
//! `MIGRATIONS[i]` takes the database from version `i` to `i + 1`. Released migrations are never
//! edited; a change to the schema is a new entry at the end.

use std::path::Path;

use rusqlite::{Connection, TransactionBehavior};

use super::error::StoreError;

/// The migrations, oldest first; the schema version is the number applied.
pub const MIGRATIONS: &[&str] = &[
    // 1: jobs, their replicas and events.
    "
    CREATE TABLE jobs (
        uid               TEXT PRIMARY KEY NOT NULL,
        namespace         TEXT NOT NULL,
        name              TEXT NOT NULL,
        kind              TEXT NOT NULL,
        -- The whole job object as JSON, status included.
        object            TEXT NOT NULL,
        retired_restarts  INTEGER NOT NULL DEFAULT 0 CHECK (retired_restarts >= 0),
        -- The trainctl process running the job: pid and start ticks, both or neither.
        owner_pid         INTEGER,
        owner_start_ticks INTEGER,
        -- RFC 3339 with nanoseconds, fixed width so that text order is time order.
        created_at        TEXT NOT NULL,
        updated_at        TEXT NOT NULL,
        finished          INTEGER NOT NULL DEFAULT 0 CHECK (finished IN (0, 1)),
        -- The resources the job holds on this machine, as JSON; NULL when none.
        hold              TEXT,
        CHECK ((owner_pid IS NULL) = (owner_start_ticks IS NULL)),
        UNIQUE (namespace, kind, name)
    ) STRICT;
    CREATE INDEX jobs_by_creation ON jobs (created_at, name);
    -- What `reserve` scans: the unfinished jobs that hold something.
    CREATE INDEX jobs_holding ON jobs (uid) WHERE hold IS NOT NULL AND finished = 0;

    CREATE TABLE replicas (
        job_uid         TEXT NOT NULL REFERENCES jobs (uid) ON DELETE CASCADE,
        replica_type    TEXT NOT NULL,
        idx             INTEGER NOT NULL CHECK (idx >= 0),
        state           TEXT NOT NULL
                        CHECK (state IN ('Pending', 'Running', 'Succeeded', 'Failed', 'Stopped')),
        pid             INTEGER,
        pid_start_ticks INTEGER,
        port            INTEGER CHECK (port BETWEEN 0 AND 65535),
        -- GPU indices as a JSON array.
        gpus            TEXT NOT NULL DEFAULT '[]',
        restarts        INTEGER NOT NULL DEFAULT 0 CHECK (restarts >= 0),
        exit_code       INTEGER,
        reason          TEXT,
        started_at      TEXT,
        finished_at     TEXT,
        -- The path's bytes: paths need not be UTF-8.
        log_path        BLOB NOT NULL,
        CHECK ((pid IS NULL) = (pid_start_ticks IS NULL)),
        PRIMARY KEY (job_uid, replica_type, idx)
    ) STRICT, WITHOUT ROWID;

    CREATE TABLE events (
        id      INTEGER PRIMARY KEY AUTOINCREMENT,
        job_uid TEXT NOT NULL REFERENCES jobs (uid) ON DELETE CASCADE,
        time    TEXT NOT NULL,
        type    TEXT NOT NULL CHECK (type IN ('Normal', 'Warning')),
        reason  TEXT NOT NULL,
        message TEXT NOT NULL,
        object  TEXT
    ) STRICT;
    CREATE INDEX events_by_job ON events (job_uid, id);
    ",
    // 2: the ConfigMaps and Secrets submitted with a job, for a server to run it later.
    "
    ALTER TABLE jobs ADD COLUMN companions TEXT NOT NULL DEFAULT '[]';
    ",
    // 3: each replica's in-place restarts of its current pod, for a server that takes the
    // replica over after a crash.
    "
    ALTER TABLE replicas ADD COLUMN pod_restarts INTEGER NOT NULL DEFAULT 0
        CHECK (pod_restarts >= 0);
    ",
    // 4: a replica's state checked by comparisons. SQLite checks `IN` with more than two values
    // through a temporary table, which every write of a replica built and dropped (16 of them
    // in a write of a 16-replica job). A check cannot be altered: the table is rebuilt.
    "
    CREATE TABLE replicas_v4 (
        job_uid         TEXT NOT NULL REFERENCES jobs (uid) ON DELETE CASCADE,
        replica_type    TEXT NOT NULL,
        idx             INTEGER NOT NULL CHECK (idx >= 0),
        state           TEXT NOT NULL
                        CHECK (state = 'Pending' OR state = 'Running' OR state = 'Succeeded'
                               OR state = 'Failed' OR state = 'Stopped'),
        pid             INTEGER,
        pid_start_ticks INTEGER,
        port            INTEGER CHECK (port BETWEEN 0 AND 65535),
        -- GPU indices as a JSON array.
        gpus            TEXT NOT NULL DEFAULT '[]',
        restarts        INTEGER NOT NULL DEFAULT 0 CHECK (restarts >= 0),
        exit_code       INTEGER,
        reason          TEXT,
        started_at      TEXT,
        finished_at     TEXT,
        -- The path's bytes: paths need not be UTF-8.
        log_path        BLOB NOT NULL,
        pod_restarts    INTEGER NOT NULL DEFAULT 0 CHECK (pod_restarts >= 0),
        CHECK ((pid IS NULL) = (pid_start_ticks IS NULL)),
        PRIMARY KEY (job_uid, replica_type, idx)
    ) STRICT, WITHOUT ROWID;
    INSERT INTO replicas_v4 (job_uid, replica_type, idx, state, pid, pid_start_ticks, port,
                             gpus, restarts, exit_code, reason, started_at, finished_at,
                             log_path, pod_restarts)
        SELECT job_uid, replica_type, idx, state, pid, pid_start_ticks, port, gpus, restarts,
               exit_code, reason, started_at, finished_at, log_path, pod_restarts
        FROM replicas;
    DROP TABLE replicas;
    ALTER TABLE replicas_v4 RENAME TO replicas;
    ",
    // 5: two more replica states, `CrashLoopBackOff` (waiting out a restart back-off) and
    // `Suspended`. The check is rebuilt with the table, as in 4.
    "
    CREATE TABLE replicas_v5 (
        job_uid         TEXT NOT NULL REFERENCES jobs (uid) ON DELETE CASCADE,
        replica_type    TEXT NOT NULL,
        idx             INTEGER NOT NULL CHECK (idx >= 0),
        state           TEXT NOT NULL
                        CHECK (state = 'Pending' OR state = 'Running' OR state = 'Succeeded'
                               OR state = 'Failed' OR state = 'Stopped'
                               OR state = 'CrashLoopBackOff' OR state = 'Suspended'),
        pid             INTEGER,
        pid_start_ticks INTEGER,
        port            INTEGER CHECK (port BETWEEN 0 AND 65535),
        -- GPU indices as a JSON array.
        gpus            TEXT NOT NULL DEFAULT '[]',
        restarts        INTEGER NOT NULL DEFAULT 0 CHECK (restarts >= 0),
        exit_code       INTEGER,
        reason          TEXT,
        started_at      TEXT,
        finished_at     TEXT,
        -- The path's bytes: paths need not be UTF-8.
        log_path        BLOB NOT NULL,
        pod_restarts    INTEGER NOT NULL DEFAULT 0 CHECK (pod_restarts >= 0),
        CHECK ((pid IS NULL) = (pid_start_ticks IS NULL)),
        PRIMARY KEY (job_uid, replica_type, idx)
    ) STRICT, WITHOUT ROWID;
    INSERT INTO replicas_v5 (job_uid, replica_type, idx, state, pid, pid_start_ticks, port,
                             gpus, restarts, exit_code, reason, started_at, finished_at,
                             log_path, pod_restarts)
        SELECT job_uid, replica_type, idx, state, pid, pid_start_ticks, port, gpus, restarts,
               exit_code, reason, started_at, finished_at, log_path, pod_restarts
        FROM replicas;
    DROP TABLE replicas;
    ALTER TABLE replicas_v5 RENAME TO replicas;
    ",
    // 6: the namespaces' `v1` `ResourceQuota`s, as applied (JSON), for the server's admission.
    "
    CREATE TABLE resource_quotas (
        namespace   TEXT NOT NULL,
        name        TEXT NOT NULL,
        created_at  TEXT NOT NULL,
        document    TEXT NOT NULL,
        PRIMARY KEY (namespace, name)
    ) STRICT, WITHOUT ROWID;
    ",
    // 7: the claims bound to a directory of the user's (`--volume CLAIM=PATH`); a claim bound
    // to none has its directory in the state directory. The ConfigMaps and Secrets the server
    // was given (JSON), for the jobs submitted after them.
    "
    CREATE TABLE claim_bindings (
        namespace   TEXT NOT NULL,
        name        TEXT NOT NULL,
        -- The path's bytes: paths need not be UTF-8.
        path        BLOB NOT NULL,
        bound_at    TEXT NOT NULL,
        PRIMARY KEY (namespace, name)
    ) STRICT, WITHOUT ROWID;

    CREATE TABLE config_objects (
        kind        TEXT NOT NULL CHECK (kind = 'ConfigMap' OR kind = 'Secret'),
        namespace   TEXT NOT NULL,
        name        TEXT NOT NULL,
        created_at  TEXT NOT NULL,
        document    TEXT NOT NULL,
        PRIMARY KEY (kind, namespace, name)
    ) STRICT, WITHOUT ROWID;
    ",
    // 8: events as series, as Kubernetes counts them (`count`, `firstTimestamp`): an event alike
    // an earlier one of its job adds to that one's row (`events::append`). `first_time` NULL:
    // the same as `time` (a row written before). `combined`: the row that takes the similar
    // events of its group once they are many. The index finds an event's group.
    "
    ALTER TABLE events ADD COLUMN count INTEGER NOT NULL DEFAULT 1 CHECK (count >= 1);
    ALTER TABLE events ADD COLUMN first_time TEXT;
    ALTER TABLE events ADD COLUMN combined INTEGER NOT NULL DEFAULT 0
        CHECK (combined = 0 OR combined = 1);
    CREATE INDEX events_by_reason ON events (job_uid, reason);
    ",
];

/// The schema version this binary writes: the number of migrations.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// Applies the missing migrations, each in its own transaction. Safe against another process
/// migrating the same file at the same time: the version is re-read under the write lock. A
/// database already up to date is only read: every command opens the store, and the write lock
/// would make it wait for any other process writing.
pub(super) fn migrate(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let known = SCHEMA_VERSION;
    let open_error = |source| StoreError::Open {
        path: path.to_owned(),
        source,
    };
    if user_version(conn).map_err(open_error)? == known {
        return Ok(());
    }
    loop {
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(open_error)?;
        let found = user_version(&tx).map_err(open_error)?;
        if found > known {
            return Err(StoreError::TooNew {
                path: path.to_owned(),
                found,
                known,
            });
        }
        if found == known {
            return Ok(());
        }
        let version = found + 1;
        tx.execute_batch(MIGRATIONS[found as usize])
            .and_then(|()| tx.pragma_update(None, "user_version", version))
            .and_then(|()| tx.commit())
            .map_err(|source| StoreError::Migrate {
                path: path.to_owned(),
                version,
                source,
            })?;
    }
}

/// `PRAGMA user_version`.
pub(super) fn user_version(conn: &Connection) -> rusqlite::Result<u32> {
    conn.pragma_query_value(None, "user_version", |row| row.get(0))
}
