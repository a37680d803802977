use std::process::{Command, Stdio};

use super::*;

/// Whether `pid` runs (a zombie does not).
fn runs(pid: i32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z'))
    })
}

#[test]
fn what_a_replica_starts_dies_with_its_cgroup_whatever_it_did_to_escape() {
    let Some(base) = enable() else {
        eprintln!("skipped: no cgroup v2 hierarchy here");
        return;
    };
    let uid = uuid::Uuid::new_v4().to_string();
    let Some(replica) = make(&uid, "worker-0", &Limits::default()) else {
        eprintln!("skipped: no cgroup can be made under {}", base.display());
        return;
    };
    // Leaves its group, its session, its parent and its environment.
    let mut command = Command::new("sh");
    command
        .args(["-c", "(env -i setsid sleep 1000 &)"])
        .stdin(Stdio::null());
    let cgroup = replica.dirs[0].clone();
    let (spawned, contained) = spawn_inside(replica.clone(), || command.spawn());
    let status = spawned.expect("sh starts").wait().expect("sh exits");
    assert!(status.success());
    assert_eq!(contained.as_ref(), Some(&replica));
    // Read while no other test forks a replica: this process is in the replica's cgroup then.
    assert_eq!(
        spawn_outside(hierarchy::own_cgroup),
        Some(base),
        "this process went back to its cgroup"
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    let escaped = loop {
        if let [pid] = members(&cgroup)[..] {
            break pid;
        }
        assert!(
            Instant::now() < deadline,
            "the sleep never ran in the cgroup"
        );
        thread::sleep(EMPTY_POLL);
    };
    assert!(runs(escaped));

    replica.kill_and_remove();
    assert!(!runs(escaped), "the escaped sleep outlived its cgroup");
    assert!(!cgroup.exists(), "the replica's cgroup is removed");
    assert!(
        !cgroup.parent().expect("job").exists(),
        "the job's cgroup is removed"
    );
}

#[test]
fn a_replica_over_its_memory_limit_is_killed_and_reported_so() {
    let limits = Limits {
        memory_bytes: Some(32 << 20),
        cpu_millis: Some(500),
    };
    enable();
    if let Some((missing, why)) = unenforced(&limits) {
        eprintln!("skipped: {missing:?} limits are not enforced here: {why}");
        return;
    }
    let uid = uuid::Uuid::new_v4().to_string();
    let replica = make(&uid, "worker-0", &limits).expect("a cgroup is made");
    // 200 MB held at once (`tail` keeps what it has read), beyond the limit.
    let mut command = Command::new("sh");
    command
        .args([
            "-c",
            "head -c 200000000 /dev/zero | tail -c 200000000 >/dev/null",
        ])
        .stdin(Stdio::null());
    let (spawned, contained) = spawn_inside(replica, || command.spawn());
    let contained = contained.expect("the replica is contained");
    let mut child = spawned.expect("sh starts");
    let pid = child.id().cast_signed();
    started(pid, contained.clone());
    let status = child.wait().expect("sh exits");
    assert!(!status.success(), "{status:?}");
    assert!(release(pid), "the out-of-memory kill is seen");
    assert!(
        contained.dirs.iter().all(|dir| !dir.exists()),
        "the replica's cgroups are removed"
    );
}
