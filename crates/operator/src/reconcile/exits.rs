//! Which replica exits were already reported, so that each gets one `ExitedWithCode` event.
//!
//! Every plan lists the exits its pods show ([`Plan::exits`]); upstream recorded the event at
//! every reconcile that saw a terminated container (its recorder then counted repeats). Here an
//! exit is reported the first time a plan lists it, through one [`ExitLedger`] per job, which
//! holds only what the job's pods show now. After a restart of the operator, the exits the pods
//! still show are reported once more.
//!
//! [`Plan::exits`]: trainctl_engine::Plan::exits

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use trainctl_engine::reconcile::{ExitLedger, ReplicaExit};

/// The exits already reported, per job uid.
#[derive(Debug, Default)]
pub struct ReportedExits {
    jobs: Mutex<HashMap<String, ExitLedger>>,
}

impl ReportedExits {
    /// The exits of `exits` (a plan's, for the job `uid`) not reported before, now counted as
    /// reported.
    pub fn unreported<'a>(&self, uid: &str, exits: &'a [ReplicaExit]) -> Vec<&'a ReplicaExit> {
        // Only ledgers are behind the lock, each updated whole: a panic elsewhere left nothing
        // half-done.
        let mut jobs = self.jobs.lock().unwrap_or_else(PoisonError::into_inner);
        let ledger = jobs.entry(uid.to_owned()).or_default();
        let fresh = ledger.unreported(exits);
        if ledger.is_empty() {
            jobs.remove(uid);
        }
        fresh
    }

    /// Forgets the job `uid` (deleted).
    pub fn forget(&self, uid: &str) {
        self.jobs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(uid);
    }
}

#[cfg(test)]
mod tests {
    use jiff::Timestamp;
    use k8s_openapi::api::core::v1::Pod;
    use serde_json::{Value, json};
    use trainctl_api::{JobKind, ReplicaType};
    use trainctl_engine::ReplicaSlot;

    use super::*;
    use crate::fixtures::reconcile_at;
    use crate::fixtures::{
        TF_JOB, children_holding, cluster, context, finish, in_phase, job, object, owned_pod, serve,
    };

    fn exit(index: i32, finished: i64, code: i32) -> ReplicaExit {
        ReplicaExit {
            slot: ReplicaSlot::new(ReplicaType::Worker, index),
            exit_code: code,
            finished_at: Some(Timestamp::from_second(finished).expect("a time")),
        }
    }

    fn indices(exits: &[&ReplicaExit]) -> Vec<i32> {
        exits.iter().map(|exit| exit.slot.index).collect()
    }

    #[test]
    fn each_exit_is_reported_once_while_its_pod_shows_it() {
        let reported = ReportedExits::default();
        let first = [exit(0, 10, 1)];
        assert_eq!(indices(&reported.unreported("job", &first)), [0]);
        assert!(reported.unreported("job", &first).is_empty());
        let both = [exit(0, 10, 1), exit(1, 12, 0)];
        assert_eq!(indices(&reported.unreported("job", &both)), [1]);
        // Another job's exits are its own.
        assert_eq!(indices(&reported.unreported("other", &first)), [0]);
    }

    #[test]
    fn a_recreated_pod_that_exits_again_is_a_new_exit() {
        let reported = ReportedExits::default();
        assert_eq!(indices(&reported.unreported("job", &[exit(0, 10, 1)])), [0]);
        // Re-created: for a while it shows no exit, then a new one with the same code.
        assert!(reported.unreported("job", &[]).is_empty());
        assert_eq!(indices(&reported.unreported("job", &[exit(0, 30, 1)])), [0]);
        assert_eq!(indices(&reported.unreported("job", &[exit(0, 40, 1)])), [0]);
    }

    /// A worker that exited 0 while the chief runs: upstream's `ExitedWithCode` about it, once,
    /// however many reconciles see it.
    #[tokio::test]
    async fn a_reconcile_reports_each_exit_once() {
        let job = job(TF_JOB);
        let mut pods: Vec<Pod> = ["mnist-chief-0", "mnist-worker-0", "mnist-worker-1"]
            .iter()
            .map(|name| in_phase(owned_pod(&job, name), "Running"))
            .collect();
        pods[2].status = Some(
            serde_json::from_value(json!({
                "phase": "Succeeded",
                "containerStatuses": [{"name": "tensorflow", "image": "tf", "imageID": "",
                    "ready": false, "restartCount": 0,
                    "state": {"terminated": {"exitCode": 0, "reason": "Completed",
                        "finishedAt": "2025-01-01T00:00:00Z"}}}],
            }))
            .expect("a pod status"),
        );
        let (ctx, handle) = context();
        let server = serve(handle, cluster(&job));
        let children = children_holding(pods, vec![]);
        let now = Timestamp::from_second(1_735_689_600).expect("a time");
        for _ in 0..2 {
            reconcile_at(JobKind::TFJob, &object(TF_JOB), &ctx, &children, now)
                .await
                .expect("reconciled");
        }
        let (_, events) = finish(ctx, server).await;
        let exits: Vec<(&Value, &Value, &Value)> = events
            .iter()
            .filter(|event| event.body["reason"] == "ExitedWithCode")
            .map(|event| {
                let body = &event.body;
                (&body["type"], &body["note"], &body["related"]["name"])
            })
            .collect();
        assert_eq!(
            exits,
            [(
                &json!("Normal"),
                &json!("Pod: ml.mnist-worker-1 exited with code 0"),
                &json!("mnist-worker-1")
            )]
        );
    }

    #[test]
    fn what_a_job_remembers_goes_with_its_exits() {
        let reported = ReportedExits::default();
        let _ = reported.unreported("a", &[exit(0, 10, 1)]);
        let _ = reported.unreported("b", &[exit(0, 10, 1)]);
        let _ = reported.unreported("a", &[]);
        reported.forget("b");
        assert!(reported.jobs.lock().expect("not poisoned").is_empty());
    }
}
