use std::path::{Path, PathBuf};

use jiff::Timestamp;
use tempfile::TempDir;
use trainctl_api::{ReplicaType, manifest};

use super::*;
use crate::process::identity::ProcessIdentity;
use crate::runner::new_record;
use crate::store::ReplicaState;
use crate::store::fixtures::{dead_process, pending_replica, state_dir};

/// A TFJob named `name` whose worker mounts the claim `claim`, recorded as run by this process.
fn job_mounting(name: &str, claim: &str) -> JobRecord {
    let yaml = format!(
        "apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: {name}
spec:
  tfReplicaSpecs:
    Worker:
      template:
        spec:
          containers:
            - name: tensorflow
              image: none
              command: [sh, -c, 'true']
              volumeMounts: [{{name: data, mountPath: /data}}]
          volumes:
            - name: data
              persistentVolumeClaim: {{claimName: {claim}}}
"
    );
    let mut loaded = manifest::load_str("job.yaml", &yaml);
    assert!(!loaded.has_errors(), "{:?}", loaded.diagnostics);
    let mut job = loaded.jobs.remove(0).job;
    new_record(&mut job, Vec::new(), Timestamp::now())
}

/// A store in a fresh state directory, that directory (to keep while the store is open), and two
/// directories to bind claims to.
fn store_and_two_directories() -> (TempDir, Store, TempDir, TempDir) {
    let temp = state_dir();
    let store = Store::open(temp.path()).expect("open");
    let (a, b) = (
        tempfile::tempdir().expect("a"),
        tempfile::tempdir().expect("b"),
    );
    (temp, store, a, b)
}

fn target(claim: &str, path: &Path) -> ClaimTarget {
    ClaimTarget {
        namespace: "default".to_owned(),
        claim: claim.to_owned(),
        path: path.to_owned(),
    }
}

#[test]
fn a_volume_is_a_claim_and_an_existing_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let canonical = std::fs::canonicalize(dir.path()).expect("canonical");
    let text = format!("data={}/.", dir.path().display());
    assert_eq!(
        VolumeBinding::parse(&text),
        Ok(VolumeBinding {
            namespace: None,
            claim: "data".to_owned(),
            path: canonical.clone(),
        })
    );
    let text = format!("team-a/train.set-1={}", dir.path().display());
    let binding = VolumeBinding::parse(&text).expect("a namespaced claim");
    assert_eq!(binding.namespace.as_deref(), Some("team-a"));
    assert_eq!(binding.claim, "train.set-1");
    assert_eq!(
        binding.text(),
        Some(format!("team-a/train.set-1={}", canonical.display()))
    );
    assert_eq!(binding.target("default").namespace, "team-a");
    let plain = VolumeBinding::parse(&format!("data={}", dir.path().display())).expect("plain");
    assert_eq!(plain.target("ml").namespace, "ml");
    assert_eq!(plain.text(), Some(format!("data={}", canonical.display())));
}

#[test]
fn a_volume_that_cannot_be_bound_says_why() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("file");
    std::fs::write(&file, "x").expect("write");
    let message = |text: &str| VolumeBinding::parse(text).expect_err(text).to_string();
    for syntax in ["training-data", "=/tmp", "data=", ""] {
        assert_eq!(
            VolumeBinding::parse(syntax),
            Err(VolumeBindingError::Syntax),
            "{syntax}"
        );
    }
    assert_eq!(
        message("x=/nope/never"),
        "/nope/never is not a directory (it does not exist)"
    );
    assert_eq!(
        message(&format!("x={}", file.display())),
        format!("{} is not a directory (it is a file)", file.display())
    );
    assert_eq!(
        message("Data=/tmp"),
        "`Data` is not a valid claim name: it holds `D`; a claim's name is a DNS-1123 \
         subdomain: lowercase letters, digits, `-` and `.`, starting and ending with a letter \
         or digit"
    );
    assert!(
        message("a/../x=/tmp")
            .starts_with("`../x` is not a valid claim name: it has an empty part")
    );
    assert!(message("a/-b=/tmp").contains("a part starts or ends with `-`"));
    assert!(message("Team/b=/tmp").starts_with("`Team` is not a valid namespace"));
}

#[test]
fn binding_records_each_claim_and_says_what_it_showed_before() {
    let (_temp, mut store, a, b) = store_and_two_directories();
    let now = Timestamp::now();
    let bound = bind(&mut store, &[target("data", a.path())], now).expect("bind");
    assert_eq!(
        bound,
        [Bound {
            namespace: "default".to_owned(),
            claim: "data".to_owned(),
            path: a.path().to_owned(),
            previous: None,
        }]
    );
    assert_eq!(
        bind(&mut store, &[target("data", a.path())], now).expect("again"),
        [],
        "a binding that is already so is no change"
    );
    let bound = bind(&mut store, &[target("data", b.path())], now).expect("rebind");
    assert_eq!(bound[0].previous.as_deref(), Some(a.path()));
    let binding = store.claim_binding("default", "data").expect("read");
    assert_eq!(binding.map(|b| b.path), Some(b.path().to_owned()));
}

#[test]
fn a_claim_a_running_job_mounts_keeps_its_directory() {
    let (temp, mut store, a, b) = store_and_two_directories();
    let now = Timestamp::now();
    bind(&mut store, &[target("data", a.path())], now).expect("bind");
    let _ = store
        .insert_job(&job_mounting("mnist", "data"))
        .expect("insert");
    assert_eq!(users(&store, "default", "data").expect("users").len(), 1);
    assert!(users(&store, "default", "other").expect("users").is_empty());
    assert!(users(&store, "team-a", "data").expect("users").is_empty());
    let error = bind(
        &mut store,
        &[target("free", b.path()), target("data", b.path())],
        now,
    )
    .expect_err("in use");
    assert_eq!(
        error.to_string(),
        format!(
            "claim default/data is used by tfjob/mnist (Pending), which has not finished: \
             binding it to {} would change the directory the job sees ({}); wait until the job \
             has finished, or delete the job first",
            b.path().display(),
            a.path().display()
        )
    );
    assert_eq!(
        store.claim_binding("default", "free").expect("read"),
        None,
        "nothing is recorded when one binding is refused"
    );
    // The same directory again is no change, in use or not.
    bind(&mut store, &[target("data", a.path())], now).expect("the same directory");
    // A claim of its own directory in use is refused a binding too.
    let _ = store
        .insert_job(&job_mounting("bert", "own"))
        .expect("insert");
    let error = bind(&mut store, &[target("own", a.path())], now).expect_err("in use");
    let own: PathBuf = temp.path().join("volumes/default/own");
    assert!(
        error.to_string().contains(&format!("({})", own.display())),
        "{error}"
    );
}

#[test]
fn a_claim_of_a_finished_or_orphaned_job_may_be_rebound() {
    let (_temp, mut store, a, b) = store_and_two_directories();
    let now = Timestamp::now();
    bind(&mut store, &[target("data", a.path())], now).expect("bind");
    let mut finished = job_mounting("done", "data");
    finished.finished = true;
    let _ = store.insert_job(&finished).expect("insert");
    let mut orphaned = job_mounting("lost", "data");
    orphaned.owner = Some(dead_process());
    let _ = store.insert_job(&orphaned).expect("insert");
    assert!(users(&store, "default", "data").expect("users").is_empty());
    let bound = bind(&mut store, &[target("data", b.path())], now).expect("rebind");
    assert_eq!(bound[0].previous.as_deref(), Some(a.path()));
}

/// A server that died leaves its replicas running (the shim keeps them): their job, whose
/// owner is dead, still uses its claims until they end.
#[test]
fn a_claim_whose_job_has_a_live_replica_keeps_its_directory() {
    let (_temp, mut store, a, b) = store_and_two_directories();
    let now = Timestamp::now();
    bind(&mut store, &[target("data", a.path())], now).expect("bind");
    let mut orphaned = job_mounting("kept", "data");
    orphaned.owner = Some(dead_process());
    let _ = store.insert_job(&orphaned).expect("insert");
    let mut replica = pending_replica(&orphaned.uid, ReplicaType::Worker, 0);
    replica.state = ReplicaState::Running;
    replica.pid = Some(ProcessIdentity::current());
    store.upsert_replica(&replica).expect("the replica");
    assert_eq!(users(&store, "default", "data").expect("users").len(), 1);
    bind(&mut store, &[target("data", b.path())], now).expect_err("in use");
    replica.pid = Some(dead_process());
    store.upsert_replica(&replica).expect("the replica ended");
    assert!(users(&store, "default", "data").expect("users").is_empty());
}

#[test]
fn a_claim_given_two_directories_is_refused() {
    let (_temp, mut store, a, b) = store_and_two_directories();
    let error = bind(
        &mut store,
        &[target("data", a.path()), target("data", b.path())],
        Timestamp::now(),
    )
    .expect_err("twice");
    assert_eq!(
        error.to_string(),
        format!(
            "claim default/data is given two directories, {} and {}; give it one",
            a.path().display(),
            b.path().display()
        )
    );
    assert_eq!(store.claim_bindings(None).expect("list"), []);
}
