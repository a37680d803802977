//! `trainctl repair`: a damaged state database is said to be damaged, with what to do, by every
//! command that meets the damage; `repair --check` finds it; `repair` keeps what can be read in
//! a new database and the damaged file beside it; a sound database is left as it is.

use std::io::{Seek as _, SeekFrom, Write as _};

use trainctl_cli_harness::scratch::Scratch;

const JOB: &str = "apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: NAME}
spec:
  tfReplicaSpecs:
    Worker:
      restartPolicy: Never
      template:
        spec:
          containers: [{name: tensorflow, image: tf, command: [sh, -c, 'echo done']}]
";

/// Writes garbage over the page that holds the jobs' rows, once the log is checkpointed into
/// the database file (as it is after a while of use).
fn damage_the_jobs(scratch: &Scratch) {
    let path = scratch.state_dir().join("trainctl.db");
    let conn = rusqlite::Connection::open(&path).expect("open");
    conn.pragma_update(None, "wal_checkpoint", "TRUNCATE")
        .expect("checkpoint");
    let root: i64 = conn
        .query_row(
            "SELECT rootpage FROM sqlite_schema WHERE name = 'jobs'",
            [],
            |row| row.get(0),
        )
        .expect("the jobs' page");
    drop(conn);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("open the file");
    file.seek(SeekFrom::Start((root.cast_unsigned() - 1) * 4096))
        .expect("seek");
    file.write_all(&[0xA5; 4096]).expect("garbage");
}

#[test]
fn a_damaged_state_database_is_named_checked_and_repaired() {
    let scratch = Scratch::new("repair");
    for name in ["first", "second"] {
        scratch.write("job.yaml", &JOB.replace("NAME", name));
        let run = scratch.trainctl(&["run", "-f", "job.yaml"]);
        assert_eq!(run.code, Some(0), "{run}");
    }
    let sound = scratch.trainctl(&["repair", "--check"]);
    assert_eq!(sound.code, Some(0), "{sound}");
    let database = scratch.state_dir().join("trainctl.db");
    assert_eq!(
        sound.stdout,
        format!("the state database {} is sound\n", database.display())
    );

    damage_the_jobs(&scratch);
    let get = scratch.trainctl(&["get"]);
    assert_eq!(get.code, Some(1), "{get}");
    assert!(
        get.stderr.contains("database disk image is malformed; the database is damaged: `trainctl repair` checks it and keeps what can still be read (stop the server first)"),
        "{get}"
    );
    let server = scratch.trainctl(&["server"]);
    assert_eq!(server.code, Some(1), "{server}");
    assert_eq!(
        server.stderr,
        format!(
            "error: the state database {} is damaged (database disk image is malformed): repair \
             it first with `trainctl repair`, which keeps what can still be read\n",
            database.display()
        )
    );
    let check = scratch.trainctl(&["repair", "--check"]);
    assert_eq!(check.code, Some(1), "{check}");
    assert!(
        check.stdout.starts_with(&format!(
            "the state database {} is damaged:\n",
            database.display()
        )) && check
            .stdout
            .ends_with("repair it with `trainctl repair` (what can be read is kept)\n"),
        "{check}"
    );

    let repaired = scratch.trainctl(&["repair"]);
    assert_eq!(repaired.code, Some(0), "{repaired}");
    assert!(
        repaired
            .stdout
            .contains("\njobs              0           yes: rows lost\n"),
        "{repaired}"
    );
    let kept_as: Vec<_> = std::fs::read_dir(scratch.state_dir())
        .expect("the state directory")
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| {
            name.starts_with("trainctl.db.damaged-")
                && !name.ends_with("-wal")
                && !name.ends_with("-shm")
        })
        .collect();
    assert_eq!(kept_as.len(), 1, "{kept_as:?}");
    assert!(
        repaired.stdout.ends_with(&format!(
            "repaired: a new trainctl.db holds what was kept; the damaged file is {}\n",
            scratch.state_dir().join(&kept_as[0]).display()
        )),
        "{repaired}"
    );
    // The new database works: sound, and new jobs run in it.
    let check = scratch.trainctl(&["repair", "--check"]);
    assert_eq!(check.code, Some(0), "{check}");
    scratch.write("job.yaml", &JOB.replace("NAME", "third"));
    let run = scratch.trainctl(&["run", "-f", "job.yaml"]);
    assert_eq!(run.code, Some(0), "{run}");
    let get = scratch.trainctl(&["get"]);
    assert_eq!(get.code, Some(0), "{get}");
    assert!(get.stdout.contains("tfjob/third"), "{get}");
}
