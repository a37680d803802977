use jiff::{Timestamp, ToSpan};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use trainctl_api::{ConditionStatus, JobCondition, JobConditionType, JobStatus, ReplicaStatus};

use super::*;
use crate::store::fixtures::{
    dead_process, event, job_record, pending_replica, pytorch_record, state_dir,
};
use crate::store::{ReplicaRecord, ReplicaState};

fn running_status() -> JobStatus {
    let since = Time(Timestamp::from_second(1_700_000_000).expect("a valid time"));
    JobStatus {
        conditions: vec![JobCondition {
            type_: JobConditionType::Running,
            status: ConditionStatus::True,
            reason: "TFJobRunning".to_owned(),
            message: "TFJob default/mnist is running.".to_owned(),
            last_update_time: Some(since.clone()),
            last_transition_time: Some(since.clone()),
        }],
        replica_statuses: [(
            trainctl_api::ReplicaType::Worker,
            ReplicaStatus {
                active: 2,
                ..ReplicaStatus::default()
            },
        )]
        .into_iter()
        .collect(),
        start_time: Some(since),
        ..JobStatus::default()
    }
}

fn running_replica(job_uid: &str) -> ReplicaRecord {
    ReplicaRecord {
        state: ReplicaState::Running,
        ..pending_replica(job_uid, trainctl_api::ReplicaType::Worker, 0)
    }
}

#[test]
fn job_round_trips_with_its_status_and_owner() {
    let temp = state_dir();
    let mut store = Store::open(temp.path()).expect("open");
    let mut record = job_record("mnist", Some(ProcessIdentity::current()));
    *record.job.status_mut() = Some(running_status());
    record.retired_restarts = 3;
    let replaced = store.insert_job(&record).expect("insert");
    assert_eq!(replaced, Replaced::default());
    assert_eq!(
        store.job_by_uid(&record.uid).expect("read"),
        Some(record.clone())
    );
    assert_eq!(
        store
            .job("default", Some(JobKind::TFJob), "mnist")
            .expect("read"),
        vec![record]
    );
}

#[test]
fn companions_round_trip() {
    let temp = state_dir();
    let mut store = Store::open(temp.path()).expect("open");
    let map = k8s_openapi::api::core::v1::ConfigMap {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some("settings".to_owned()),
            ..Default::default()
        },
        data: Some([("epochs".to_owned(), "3".to_owned())].into()),
        ..Default::default()
    };
    let secret = k8s_openapi::api::core::v1::Secret {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some("token".to_owned()),
            ..Default::default()
        },
        string_data: Some([("key".to_owned(), "s3cr3t".to_owned())].into()),
        ..Default::default()
    };
    let record = JobRecord {
        companions: vec![
            trainctl_api::manifest::Companion::ConfigMap(map),
            trainctl_api::manifest::Companion::Secret(secret),
        ],
        ..job_record("mnist", None)
    };
    let _ = store.insert_job(&record).expect("insert");
    assert_eq!(store.job_by_uid(&record.uid).expect("read"), Some(record));
}

#[test]
fn every_kind_round_trips() {
    let temp = state_dir();
    let mut store = Store::open(temp.path()).expect("open");
    let record = pytorch_record("resnet");
    let _ = store.insert_job(&record).expect("insert");
    assert_eq!(store.job_by_uid(&record.uid).expect("read"), Some(record));
}

#[test]
fn finished_job_of_the_same_name_is_replaced_with_its_replicas_and_events() {
    let temp = state_dir();
    let mut store = Store::open(temp.path()).expect("open");
    let old = JobRecord {
        finished: true,
        ..job_record("mnist", Some(ProcessIdentity::current()))
    };
    let _ = store.insert_job(&old).expect("insert");
    store
        .upsert_replica(&running_replica(&old.uid))
        .expect("replica");
    store
        .append_event(&old.uid, &event("Created"))
        .expect("event");

    let new = job_record("mnist", Some(ProcessIdentity::current()));
    let replaced = store.insert_job(&new).expect("replace");

    assert_eq!(replaced.uid.as_deref(), Some(old.uid.as_str()));
    assert_eq!(store.job_by_uid(&old.uid).expect("read"), None);
    assert!(store.replicas(&old.uid).expect("read").is_empty());
    assert!(store.events(&old.uid).expect("read").is_empty());
    assert_eq!(
        store.job("default", None, "mnist").expect("read"),
        vec![new]
    );
}

#[test]
fn running_job_of_the_same_name_is_refused() {
    let temp = state_dir();
    let mut store = Store::open(temp.path()).expect("open");
    let owner = ProcessIdentity::current();
    let running = job_record("mnist", Some(owner));
    let _ = store.insert_job(&running).expect("insert");

    let second = job_record("mnist", Some(owner));
    let error = store.insert_job(&second).expect_err("refused");

    assert_eq!(
        error.to_string(),
        format!(
            "tfjob \"default/mnist\" is already running (trainctl pid {})",
            owner.pid
        )
    );
    assert!(matches!(error, StoreError::JobExists { owner_pid, .. } if owner_pid == owner.pid));
    assert_eq!(store.job_by_uid(&running.uid).expect("read"), Some(running));
    assert_eq!(store.job_by_uid(&second.uid).expect("read"), None);
}

#[test]
fn unfinished_job_whose_owner_died_is_replaced() {
    let temp = state_dir();
    let mut store = Store::open(temp.path()).expect("open");
    let abandoned = job_record("mnist", Some(dead_process()));
    let _ = store.insert_job(&abandoned).expect("insert");

    let new = job_record("mnist", Some(ProcessIdentity::current()));
    let replaced = store.insert_job(&new).expect("replace");

    assert_eq!(replaced.uid, Some(abandoned.uid));
}

#[test]
fn unfinished_job_without_owner_is_replaced() {
    let temp = state_dir();
    let mut store = Store::open(temp.path()).expect("open");
    let orphan = job_record("mnist", None);
    let _ = store.insert_job(&orphan).expect("insert");

    let replaced = store
        .insert_job(&job_record("mnist", None))
        .expect("replace");

    assert_eq!(replaced.uid, Some(orphan.uid));
}

#[test]
fn same_name_in_another_kind_or_namespace_is_another_job() {
    let temp = state_dir();
    let mut store = Store::open(temp.path()).expect("open");
    let tf = job_record("mnist", Some(ProcessIdentity::current()));
    let pytorch = pytorch_record("mnist");
    let mut elsewhere = job_record("mnist", Some(ProcessIdentity::current()));
    elsewhere.namespace = "research".to_owned();
    for record in [&tf, &pytorch, &elsewhere] {
        assert_eq!(
            store.insert_job(record).expect("insert"),
            Replaced::default()
        );
    }

    let by_name = store.job("default", None, "mnist").expect("read");
    let uids: Vec<&str> = by_name.iter().map(|r| r.uid.as_str()).collect();
    assert_eq!(uids.len(), 2);
    assert!(uids.contains(&tf.uid.as_str()) && uids.contains(&pytorch.uid.as_str()));
    assert_eq!(
        store
            .job("default", Some(JobKind::PyTorchJob), "mnist")
            .expect("read"),
        vec![pytorch]
    );
    assert_eq!(
        store.job("research", None, "mnist").expect("read"),
        vec![elsewhere]
    );
    assert!(
        store
            .job("default", None, "other")
            .expect("read")
            .is_empty()
    );
}

#[test]
fn jobs_are_listed_oldest_first_then_by_name() {
    let temp = state_dir();
    let mut store = Store::open(temp.path()).expect("open");
    let t0 = Timestamp::from_second(1_700_000_000).expect("a valid time");
    // A whole second and a fraction after it: fixed-width text keeps them in time order.
    let later = t0 + 500.milliseconds();
    let mut records = Vec::new();
    for (name, created_at) in [("c", later), ("b", t0), ("a", t0)] {
        let record = JobRecord {
            created_at,
            updated_at: created_at,
            ..job_record(name, None)
        };
        let _ = store.insert_job(&record).expect("insert");
        records.push(record);
    }
    let mut research = pytorch_record("d");
    research.namespace = "research".to_owned();
    let _ = store.insert_job(&research).expect("insert");

    let names = |jobs: Vec<JobRecord>| jobs.into_iter().map(|r| r.name).collect::<Vec<_>>();
    assert_eq!(
        names(store.jobs(Some("default"), None).expect("list")),
        ["a", "b", "c"]
    );
    assert_eq!(
        names(store.jobs(None, Some(JobKind::PyTorchJob)).expect("list")),
        ["d"]
    );
    assert_eq!(store.jobs(None, None).expect("list").len(), 4);
}

#[test]
fn update_job_records_the_new_status_and_finish() {
    let temp = state_dir();
    let mut store = Store::open(temp.path()).expect("open");
    let record = JobRecord {
        updated_at: Timestamp::from_second(1_700_000_000).expect("a valid time"),
        ..job_record("mnist", Some(ProcessIdentity::current()))
    };
    let _ = store.insert_job(&record).expect("insert");
    let mut job = record.job.clone();
    *job.status_mut() = Some(running_status());

    store
        .update_job(&record.uid, &job, 2, true)
        .expect("update");

    let stored = store
        .job_by_uid(&record.uid)
        .expect("read")
        .expect("exists");
    assert_eq!(stored.job, job);
    assert_eq!(stored.retired_restarts, 2);
    assert!(stored.finished);
    assert!(stored.updated_at > record.updated_at);
    assert_eq!(stored.created_at, record.created_at);
}

#[test]
fn set_owner_records_and_clears_the_owner() {
    let temp = state_dir();
    let mut store = Store::open(temp.path()).expect("open");
    let record = job_record("mnist", None);
    let _ = store.insert_job(&record).expect("insert");
    let owner = ProcessIdentity {
        pid: 7,
        start_ticks: u64::MAX,
    };

    store.set_owner(&record.uid, Some(owner)).expect("set");
    let stored = store
        .job_by_uid(&record.uid)
        .expect("read")
        .expect("exists");
    assert_eq!(stored.owner, Some(owner));

    store.set_owner(&record.uid, None).expect("clear");
    let stored = store
        .job_by_uid(&record.uid)
        .expect("read")
        .expect("exists");
    assert_eq!(stored.owner, None);
}

#[test]
fn writes_to_an_unknown_job_say_so() {
    let temp = state_dir();
    let mut store = Store::open(temp.path()).expect("open");
    let job = job_record("mnist", None).job;
    for error in [
        store
            .update_job("nope", &job, 0, false)
            .expect_err("unknown"),
        store.set_owner("nope", None).expect_err("unknown"),
        store
            .upsert_replica(&running_replica("nope"))
            .expect_err("unknown"),
        store
            .append_event("nope", &event("Created"))
            .expect_err("unknown"),
    ] {
        assert!(
            matches!(&error, StoreError::NoSuchJob { uid, .. } if uid == "nope"),
            "{error:?}"
        );
    }
    assert!(!store.delete_job("nope").expect("delete"));
}

#[test]
fn delete_job_removes_its_replicas_and_events() {
    let temp = state_dir();
    let mut store = Store::open(temp.path()).expect("open");
    let record = job_record("mnist", None);
    let _ = store.insert_job(&record).expect("insert");
    store
        .upsert_replica(&running_replica(&record.uid))
        .expect("replica");
    store
        .append_event(&record.uid, &event("Created"))
        .expect("event");

    assert!(store.delete_job(&record.uid).expect("delete"));

    assert_eq!(store.job_by_uid(&record.uid).expect("read"), None);
    assert!(store.replicas(&record.uid).expect("read").is_empty());
    assert!(store.events(&record.uid).expect("read").is_empty());
}
