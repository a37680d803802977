//! Nothing of a job with volumes outlives it: after Ctrl-C and after a `SIGKILL` of `trainctl`,
//! no process of the job, no mount in the host's table, and (after Ctrl-C) nothing left of the
//! replicas' own directories.

use std::time::Duration;

use crate::volumes::kinds::COMPANIONS;
use crate::volumes::support::{
    INDEX_ENV, Replicas, SOON, Scratch, User, mount_table, scenario, signal, tfjob, wait_for,
};

/// Two workers with every kind of volume made on disk, and one in memory, each writing a line
/// to the claim and sleeping.
fn sleeping_job(scratch: &Scratch) -> String {
    scratch.write(
        "job.yaml",
        &tfjob(
            "sleepy",
            COMPANIONS,
            &[
                Replicas::workers(2, "echo up $INDEX >> /data/up.txt\nsleep 300")
                    .with(
                        &[
                            "{name: data, persistentVolumeClaim: {claimName: shared}}",
                            "{name: config, configMap: {name: settings}}",
                            "{name: creds, secret: {secretName: token}}",
                            "{name: scratch, emptyDir: {}}",
                            "{name: cache, emptyDir: {medium: Memory}}",
                        ],
                        &[
                            "{name: data, mountPath: /data}",
                            "{name: config, mountPath: /etc/config}",
                            "{name: creds, mountPath: /etc/creds}",
                            "{name: scratch, mountPath: /scratch}",
                            "{name: cache, mountPath: /cache}",
                        ],
                    )
                    .env(&[INDEX_ENV]),
            ],
        ),
    )
}

/// Starts the sleeping job and waits for both `sleep`s; the host's mount table before it.
fn start(scratch: &Scratch) -> (crate::volumes::support::Running, usize) {
    let before = mount_table().len();
    let manifest = sleeping_job(scratch);
    let running = scratch.spawn_run(&manifest, &["-q"]);
    wait_for("two sleeping replicas", SOON, || {
        (scratch.processes_named("sleep").len() == 2).then_some(())
    });
    let up = std::fs::read_to_string(scratch.claim("default", "shared").join("up.txt"))
        .expect("the replicas wrote to the claim");
    assert_eq!(
        crate::volumes::support::sorted(up.lines()),
        ["up 0", "up 1"]
    );
    // The replicas' mounts are theirs alone.
    assert_eq!(scratch.our_mounts(), Vec::<String>::new());
    assert!(
        !scratch.pods_left().is_empty(),
        "the replicas' ConfigMap, Secret and emptyDir are under pods/"
    );
    (running, before)
}

/// Starts the sleeping job, `SIGKILL`s `trainctl`, and waits for the watchdog to end every
/// process of the job; the host's mount table before it.
fn start_then_kill_trainctl(scratch: &Scratch) -> usize {
    let (running, before) = start(scratch);
    signal(running.pid(), "KILL");
    let run = running.finish(SOON);
    assert_eq!(run.code, None, "{run}");
    // SIGTERM, the grace period of 1 s, then SIGKILL: well within 5 s.
    wait_for(
        "every process of the job to end",
        Duration::from_secs(5),
        || scratch.processes().is_empty().then_some(()),
    );
    before
}

/// The host's mount table is as it was: as many lines, none naming the test's directory.
fn mounts_unchanged(scratch: &Scratch, before: usize) {
    assert_eq!(scratch.our_mounts(), Vec::<String>::new());
    assert_eq!(mount_table().len(), before, "{:#?}", mount_table());
}

/// Ctrl-C stops the replicas, and their mounts end with them; their directories are removed.
fn ctrl_c_leaves_no_process_mount_or_pod_directory(user: &User) {
    let scratch = Scratch::new("ctrlc", user);
    let (running, before) = start(&scratch);
    signal(running.pid(), "INT");
    let run = running.finish(SOON);
    assert_eq!(run.code, Some(130), "{run}");
    assert!(scratch.processes().is_empty(), "{:?}", scratch.processes());
    mounts_unchanged(&scratch, before);
    assert_eq!(
        scratch.pods_left(),
        Vec::<std::path::PathBuf>::new(),
        "{run}"
    );
    // The claim is kept.
    assert!(scratch.claim("default", "shared").join("up.txt").is_file());
}

scenario!(ctrl_c_leaves_no_process_mount_or_pod_directory);

/// A `SIGKILL` of `trainctl`: the watchdog stops the replicas, and their mounts end with
/// them.
fn killed_trainctl_leaves_no_process_or_mount(user: &User) {
    let scratch = Scratch::new("sigkill", user);
    let before = start_then_kill_trainctl(&scratch);
    mounts_unchanged(&scratch, before);
}

scenario!(killed_trainctl_leaves_no_process_or_mount);

/// After a `SIGKILL` of `trainctl`, the watchdog removes the replicas' own directories (the
/// ConfigMap's and Secret's files, the emptyDirs) under `pods/<uid>` once it has stopped them;
/// deleting the job leaves none either.
#[test]
fn killed_trainctl_leaves_no_pod_directory() {
    let scratch = Scratch::new("sigkill-pods", &User::invoker());
    start_then_kill_trainctl(&scratch);
    let left = wait_for("pods/<uid> to be removed", Duration::from_secs(2), || {
        Some(scratch.pods_left()).filter(Vec::is_empty)
    })
    .len();
    assert_eq!(left, 0);
    let delete = scratch.trainctl(&["delete", "tfjob/sleepy"]);
    assert_eq!(delete.code, Some(0), "{delete}");
    assert_eq!(scratch.pods_left(), Vec::<std::path::PathBuf>::new());
}
