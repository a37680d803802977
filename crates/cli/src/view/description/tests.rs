//! `describe`'s text, from records built here.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use trainctl_api::manifest::load_str;
use trainctl_api::{JobCondition, JobConditionType, JobStatus, ReplicaType};
use trainctl_local::store::ReplicaState;

use super::spec::shell_quote;
use super::*;

const MANIFEST: &str = r#"
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: mnist
  namespace: team-a
  labels: {team: vision}
spec:
  runPolicy:
    backoffLimit: 3
    activeDeadlineSeconds: 600
    schedulingPolicy:
      priorityClass: high
  tfReplicaSpecs:
    Chief:
      restartPolicy: Never
      template:
        spec:
          containers:
          - name: tensorflow
            image: tensorflow/tensorflow:2.16.1
            command: [python, train.py]
            args: ["--epochs=3"]
    Worker:
      replicas: 2
      restartPolicy: OnFailure
      template:
        spec:
          containers:
          - name: sidecar
            image: busybox
            command: [sleep, "3600"]
          - name: tensorflow
            image: tensorflow/tensorflow:2.16.1
            command: [sh, -c, "echo it's\nsleep 1"]
            resources:
              requests: {cpu: "2", memory: 4Gi}
              limits: {nvidia.com/gpu: 1}
            env:
            - {name: EPOCHS, value: "3"}
            - name: BUCKET
              valueFrom: {configMapKeyRef: {name: settings, key: bucket}}
            - name: TOKEN
              valueFrom: {secretKeyRef: {name: creds, key: token}}
            envFrom: [{configMapRef: {name: common}}]
            volumeMounts:
            - {name: data, mountPath: /data, readOnly: true}
            - {name: scratch, mountPath: /tmp/scratch}
          volumes:
          - {name: data, persistentVolumeClaim: {claimName: imagenet}}
          - {name: scratch, emptyDir: {}}
        metadata:
          labels: {app: mnist}
"#;

fn at(text: &str) -> Timestamp {
    text.parse().expect("a timestamp")
}

fn job(manifest: &str) -> TrainingJob {
    let mut manifests = load_str("job.yaml", manifest);
    assert!(!manifests.has_errors(), "{:?}", manifests.diagnostics);
    manifests.jobs.remove(0).job
}

fn record(job: TrainingJob, finished: bool) -> JobRecord {
    JobRecord {
        uid: "6b0c0000-0000-4000-8000-000000000001".to_owned(),
        namespace: job.namespace().to_owned(),
        name: job.name().to_owned(),
        kind: job.kind(),
        job,
        retired_restarts: 0,
        owner: None,
        created_at: at("2026-11-24T10:00:00Z"),
        updated_at: at("2026-11-24T10:01:05Z"),
        finished,
        companions: Vec::new(),
    }
}

fn condition(
    type_: JobConditionType,
    status: ConditionStatus,
    message: &str,
    time: &str,
) -> JobCondition {
    JobCondition {
        type_,
        status,
        reason: format!("TFJob{type_}"),
        message: message.to_owned(),
        last_update_time: Some(Time(at(time))),
        last_transition_time: Some(Time(at(time))),
    }
}

fn replica(replica_type: ReplicaType, index: i32, state: ReplicaState) -> ReplicaRecord {
    ReplicaRecord {
        job_uid: "6b0c0000-0000-4000-8000-000000000001".to_owned(),
        replica_type,
        index,
        state,
        pid: None,
        port: Some(40_123 + index as u16),
        gpus: Vec::new(),
        restarts: 0,
        pod_restarts: 0,
        exit_code: Some(0),
        reason: None,
        started_at: Some(at("2026-11-24T10:00:01Z")),
        finished_at: Some(at("2026-11-24T10:01:00Z")),
        log_path: "worker-0.log".into(),
    }
}

/// The manifest's job as it ends: succeeded after 1m4s, with its replicas and events.
fn succeeded() -> Description {
    let mut job = job(MANIFEST);
    *job.status_mut() = Some(JobStatus {
        conditions: vec![
            condition(
                JobConditionType::Created,
                ConditionStatus::True,
                "TFJob mnist is created.",
                "2026-11-24T10:00:00Z",
            ),
            condition(
                JobConditionType::Running,
                ConditionStatus::False,
                "TFJob team-a/mnist is running.",
                "2026-11-24T10:01:05Z",
            ),
            condition(
                JobConditionType::Succeeded,
                ConditionStatus::True,
                "TFJob team-a/mnist successfully completed.",
                "2026-11-24T10:01:05Z",
            ),
        ],
        start_time: Some(Time(at("2026-11-24T10:00:01Z"))),
        completion_time: Some(Time(at("2026-11-24T10:01:05Z"))),
        ..JobStatus::default()
    });
    let mut worker_1 = replica(ReplicaType::Worker, 1, ReplicaState::Failed);
    worker_1.exit_code = Some(137);
    worker_1.restarts = 2;
    worker_1.gpus = vec![0, 1];
    let mut worker_0 = replica(ReplicaType::Worker, 0, ReplicaState::Stopped);
    worker_0.exit_code = None;
    worker_0.port = None;
    worker_0.started_at = None;
    Description::local(
        "Succeeded",
        record(job, true),
        &[
            replica(ReplicaType::Chief, 0, ReplicaState::Succeeded),
            worker_0,
            worker_1,
        ],
        &[
            EventRecord::once(
                at("2026-11-24T10:00:01Z"),
                "Normal",
                "SuccessfulCreatePod",
                "Created pod: mnist-chief-0".to_owned(),
                None,
            ),
            EventRecord {
                first_time: at("2026-11-24T10:00:20Z"),
                count: 2,
                ..EventRecord::once(
                    at("2026-11-24T10:00:40Z"),
                    "Warning",
                    "BackOff",
                    "Back-off restarting failed container of pod mnist-worker-1".to_owned(),
                    Some("mnist-worker-1".to_owned()),
                )
            },
            EventRecord::once(
                at("2026-11-24T10:01:05Z"),
                "Normal",
                "TFJobSucceeded",
                "TFJob team-a/mnist successfully completed.".to_owned(),
                None,
            ),
        ],
        BTreeMap::from([(
            "imagenet".to_owned(),
            ClaimBacking::Bound("/srv/datasets/imagenet".into()),
        )]),
    )
}

#[test]
fn finished_job_shows_identity_times_spec_replicas_conditions_and_events() {
    let text = succeeded().render(at("2026-11-24T10:05:00Z"));
    assert_eq!(
        text,
        "\
Name:       mnist
Namespace:  team-a
Kind:       TFJob
UID:        6b0c0000-0000-4000-8000-000000000001
Labels:     team=vision
State:      Succeeded
Created:    2026-11-24T10:00:00Z (5m ago)
Started:    2026-11-24T10:00:01Z
Completed:  2026-11-24T10:01:05Z
Duration:   1m4s
Spec:
  Chief:
    Replicas:        1
    Restart Policy:  Never
    Container:       tensorflow
    Image:           tensorflow/tensorflow:2.16.1
    Command:         python train.py --epochs=3
  Worker:
    Replicas:        2
    Restart Policy:  OnFailure
    Labels:          app=mnist
    Container:       tensorflow
    Image:           tensorflow/tensorflow:2.16.1
    Command:         sh -c 'echo it'\\''s
                     sleep 1'
    Requests:        cpu=2, memory=4Gi
    Limits:          nvidia.com/gpu=1
    Environment:     <every key of configMap common>
                     EPOCHS=3
                     BUCKET=<key bucket of configMap settings>
                     TOKEN=<key token of secret creds>
    Mounts:          /data from data (ro)
                     /tmp/scratch from scratch (rw)
    Volumes:         data: PersistentVolumeClaim imagenet (bound to /srv/datasets/imagenet)
                     scratch: EmptyDir
  Run Policy:
    Clean Pod Policy:            None
    Backoff Limit:               3
    Active Deadline Seconds:     600
    TTL Seconds After Finished:  <unset>
    Suspend:                     false
    Priority Class:              high
Replicas:
  REPLICA    STATE       EXIT   RESTARTS   PID   PORT    GPUS   STARTED
  chief-0    Succeeded   0      0          -     40123   -      2026-11-24T10:00:01Z
  worker-0   Stopped     -      0          -     -       -      -
  worker-1   Failed      137    2          -     40124   0,1    2026-11-24T10:00:01Z
Conditions:
  TYPE        STATUS   REASON           MESSAGE                                      LAST TRANSITION
  Created     True     TFJobCreated     TFJob mnist is created.                      2026-11-24T10:00:00Z
  Running     False    TFJobRunning     TFJob team-a/mnist is running.               2026-11-24T10:01:05Z
  Succeeded   True     TFJobSucceeded   TFJob team-a/mnist successfully completed.   2026-11-24T10:01:05Z
Events:
  AGE               TYPE      REASON                MESSAGE
  4m                Normal    SuccessfulCreatePod   Created pod: mnist-chief-0
  4m (x2 over 4m)   Warning   BackOff               Back-off restarting failed container of pod mnist-worker-1
  3m                Normal    TFJobSucceeded        TFJob team-a/mnist successfully completed.
"
    );
}

#[test]
fn job_not_started_has_no_times_and_empty_sections() {
    let description = Description::local(
        "Pending",
        record(job(MANIFEST), false),
        &[],
        &[],
        BTreeMap::new(),
    );
    let text = description.render(at("2026-11-24T10:00:30Z"));
    for absent in ["Started:", "Completed:", "Duration:"] {
        assert!(!text.contains(absent), "{absent} in:\n{text}");
    }
    assert!(text.contains("\nState:      Pending\n"), "{text}");
    assert!(
        text.contains("\nCreated:    2026-11-24T10:00:00Z (30s ago)\n"),
        "{text}"
    );
    assert!(
        text.ends_with("Replicas:  <none>\nConditions:  <none>\nEvents:  <none>\n"),
        "{text}"
    );
}

#[test]
fn a_claim_shows_its_own_directory_and_stays_read_only() {
    let manifest = MANIFEST.replace(
        "{claimName: imagenet}",
        "{claimName: imagenet, readOnly: true}",
    );
    let claims = BTreeMap::from([(
        "imagenet".to_owned(),
        ClaimBacking::Own("/state/volumes/team-a/imagenet".into()),
    )]);
    let text = Description::local("Pending", record(job(&manifest), false), &[], &[], claims)
        .render(at("2026-11-24T10:00:30Z"));
    assert!(
        text.contains(
            "    Volumes:         data: PersistentVolumeClaim imagenet (read-only, at \
             /state/volumes/team-a/imagenet)\n"
        ),
        "{text}"
    );
    let text = Description::local(
        "Pending",
        record(job(&manifest), false),
        &[],
        &[],
        BTreeMap::new(),
    )
    .render(at("2026-11-24T10:00:30Z"));
    assert!(
        text.contains("    Volumes:         data: PersistentVolumeClaim imagenet (read-only)\n"),
        "on a cluster, nothing is known of what backs a claim: {text}"
    );
}

#[test]
fn unset_run_policy_fields_say_so() {
    let manifest = MANIFEST.replace(
        "  runPolicy:\n    backoffLimit: 3\n    activeDeadlineSeconds: 600\n    schedulingPolicy:\n      priorityClass: high\n",
        "",
    );
    assert_ne!(manifest, MANIFEST);
    let text = Description::local(
        "Pending",
        record(job(&manifest), false),
        &[],
        &[],
        BTreeMap::new(),
    )
    .render(at("2026-11-24T10:00:30Z"));
    for line in [
        "    Active Deadline Seconds:     <unset>\n",
        "    TTL Seconds After Finished:  <unset>\n",
        "    Priority Class:              <unset>\n",
    ] {
        assert!(text.contains(line), "no `{line}` in:\n{text}");
    }
}

#[test]
fn a_replica_without_command_shows_unset() {
    let manifest = MANIFEST.replace(
        "            command: [python, train.py]\n            args: [\"--epochs=3\"]\n",
        "",
    );
    let text = Description::local(
        "Pending",
        record(job(&manifest), false),
        &[],
        &[],
        BTreeMap::new(),
    )
    .render(at("2026-11-24T10:00:30Z"));
    assert!(
        text.contains("  Chief:\n    Replicas:        1\n    Restart Policy:  Never\n    Container:       tensorflow\n    Image:           tensorflow/tensorflow:2.16.1\n    Command:         <unset>\n"),
        "{text}"
    );
}

#[test]
fn shell_quote_leaves_plain_words_and_quotes_the_rest() {
    assert_eq!(shell_quote("--epochs=3"), "--epochs=3");
    assert_eq!(shell_quote("a b"), "'a b'");
    assert_eq!(shell_quote(""), "''");
    assert_eq!(shell_quote("it's"), r"'it'\''s'");
    assert_eq!(shell_quote("$HOME"), "'$HOME'");
}

#[test]
fn durations_read_as_hours_minutes_seconds() {
    assert_eq!(duration(SignedDuration::from_secs(59)), "59s");
    assert_eq!(duration(SignedDuration::from_secs(240)), "4m0s");
    assert_eq!(duration(SignedDuration::from_secs(3_723)), "1h2m3s");
    assert_eq!(duration(SignedDuration::from_secs(-5)), "0s");
}

#[test]
fn what_a_replicas_log_lost_is_among_the_events_at_its_time() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = dir.path().join("worker-1.log");
    std::fs::write(&log, "x".repeat(1000)).expect("write");
    std::fs::write(
        dir.path().join("worker-1.log.1"),
        "y".repeat(2 * 1024 * 1024),
    )
    .expect("write");
    let marker = dir.path().join("worker-1.dropped");
    std::fs::write(&marker, "rotated 49283072\nunwritten 700\n").expect("write");
    std::fs::File::options()
        .write(true)
        .open(&marker)
        .expect("open")
        .set_modified(at("2026-11-24T10:01:00Z").into())
        .expect("set the marker's time");
    let mut worker_1 = replica(ReplicaType::Worker, 1, ReplicaState::Failed);
    worker_1.log_path = log;
    let description = Description::local(
        "Failed",
        record(job(MANIFEST), true),
        &[
            replica(ReplicaType::Worker, 0, ReplicaState::Succeeded),
            worker_1,
        ],
        &[
            EventRecord::once(
                at("2026-11-24T10:00:01Z"),
                "Normal",
                "SuccessfulCreatePod",
                "Created pod: mnist-worker-1".to_owned(),
                None,
            ),
            EventRecord::once(
                at("2026-11-24T10:01:05Z"),
                "Normal",
                "TFJobFailed",
                "TFJob team-a/mnist has failed.".to_owned(),
                None,
            ),
        ],
        BTreeMap::new(),
    );
    let text = description.render(at("2026-11-24T10:05:00Z"));
    let events = &text[text.find("Events:").expect("an Events section")..];
    assert_eq!(
        events,
        "\
Events:
  AGE   TYPE      REASON                MESSAGE
  4m    Normal    SuccessfulCreatePod   Created pod: mnist-worker-1
  4m    Normal    LogRotated            worker-1's log was rotated: its oldest 47.0 MiB (49283072 bytes) were dropped; 2.0 MiB (2098152 bytes) in 2 files are kept
  4m    Warning   LogIncomplete         worker-1's log misses 700 bytes of its output: the disk was full
  3m    Normal    TFJobFailed           TFJob team-a/mnist has failed.
"
    );
}

#[test]
fn sizes_are_shown_in_the_largest_binary_unit_with_their_bytes() {
    assert_eq!(bytes(0), "0 bytes");
    assert_eq!(bytes(1023), "1023 bytes");
    assert_eq!(bytes(1024), "1.0 KiB (1024 bytes)");
    assert_eq!(bytes(1536), "1.5 KiB (1536 bytes)");
    assert_eq!(bytes(3 * 1024 * 1024), "3.0 MiB (3145728 bytes)");
    assert_eq!(bytes(5 << 40), "5.0 TiB (5497558138880 bytes)");
    assert_eq!(bytes(2048 << 40), "2048.0 TiB (2251799813685248 bytes)");
}
