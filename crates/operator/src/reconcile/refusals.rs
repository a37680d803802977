//! The pod creations the API server refused, per job, so that the job's status says why those
//! replicas are missing.
//!
//! A `ResourceQuota` or an admission webhook refuses a pod when it is created; nothing of the
//! refusal stays on the cluster but a `FailedCreatePod` event. Upstream left it at that: the job
//! read `Running` with two of its three workers missing. Here the refusal's words are kept, per
//! job and slot, until a creation of that slot succeeds; the next reconcile hands them to the
//! engine ([`Observed::refused`]), which puts them in the `Created` condition's message
//! (`Pending: mnist-worker-1 cannot be created (pods "mnist-worker-1" is forbidden: exceeded
//! quota: ...)`). Only refusals (HTTP 400, 403, 422) count: a conflict or a server error says
//! nothing about the pod.
//!
//! [`Observed::refused`]: trainctl_engine::Observed::refused

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, PoisonError};

use trainctl_engine::ReplicaSlot;

/// The refused creations, per job uid.
#[derive(Debug, Default)]
pub struct Refusals {
    jobs: Mutex<HashMap<String, BTreeMap<ReplicaSlot, String>>>,
}

/// What one attempt to create a slot's pod came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt {
    /// The pod exists now.
    Created,
    /// The API server refused it, saying this.
    Refused(String),
    /// It failed otherwise (a server or connection error): what was known stays.
    Failed,
}

impl Attempt {
    /// The attempt a creation's outcome stands for.
    #[must_use]
    pub fn of<T>(result: &Result<T, kube::Error>) -> Attempt {
        match result {
            Ok(_) => Attempt::Created,
            // Bad request, forbidden (a quota, a terminating namespace), invalid (a webhook):
            // not a conflict, which a retry resolves.
            Err(kube::Error::Api(status)) if matches!(status.code, 400 | 403 | 422) => {
                Attempt::Refused(status.message.clone())
            }
            Err(_) => Attempt::Failed,
        }
    }
}

impl Refusals {
    /// The refusals standing for the job `uid`.
    #[must_use]
    pub fn of(&self, uid: &str) -> BTreeMap<ReplicaSlot, String> {
        self.lock().get(uid).cloned().unwrap_or_default()
    }

    /// Notes what attempts to create the job `uid`'s pods came to.
    pub fn note(&self, uid: &str, attempts: impl IntoIterator<Item = (ReplicaSlot, Attempt)>) {
        let mut jobs = self.lock();
        let refused = jobs.entry(uid.to_owned()).or_default();
        for (slot, attempt) in attempts {
            match attempt {
                Attempt::Created => {
                    refused.remove(&slot);
                }
                Attempt::Refused(why) => {
                    refused.insert(slot, why);
                }
                Attempt::Failed => {}
            }
        }
        if refused.is_empty() {
            jobs.remove(uid);
        }
    }

    /// Forgets the job `uid` (deleted).
    pub fn forget(&self, uid: &str) {
        self.lock().remove(uid);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, BTreeMap<ReplicaSlot, String>>> {
        // Each map is updated whole under the lock: a panic elsewhere left nothing half-done.
        self.jobs.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use http::{Method, StatusCode};
    use jiff::Timestamp;
    use serde_json::json;
    use trainctl_api::{JobKind, ReplicaType};

    use super::*;
    use crate::fixtures::reconcile_at;
    use crate::fixtures::{
        Sent, TF_JOB, children_holding, cluster, context, finish, job, object, owned_pod,
        owned_service, serve, status_body, with_status,
    };

    fn worker(index: i32) -> ReplicaSlot {
        ReplicaSlot::new(ReplicaType::Worker, index)
    }

    fn api_error(code: u16, message: &str) -> Result<(), kube::Error> {
        Err(kube::Error::Api(Box::new(kube::core::Status {
            code,
            message: message.to_owned(),
            ..kube::core::Status::default()
        })))
    }

    #[test]
    fn a_refusal_stands_until_its_slot_is_created() {
        let refusals = Refusals::default();
        let quota = "pods \"mnist-worker-1\" is forbidden: exceeded quota: q";
        refusals.note(
            "uid",
            [
                (worker(0), Attempt::of(&Ok::<(), kube::Error>(()))),
                (worker(1), Attempt::of(&api_error(403, quota))),
                (worker(2), Attempt::of(&api_error(422, "invalid"))),
            ],
        );
        assert_eq!(
            refusals.of("uid"),
            BTreeMap::from([
                (worker(1), quota.to_owned()),
                (worker(2), "invalid".to_owned())
            ])
        );
        assert!(refusals.of("other").is_empty());

        // A conflict or a server error says nothing new; a creation clears its slot.
        refusals.note(
            "uid",
            [
                (worker(1), Attempt::of(&api_error(500, "etcd is down"))),
                (worker(1), Attempt::of(&api_error(409, "conflict"))),
                (worker(2), Attempt::Created),
            ],
        );
        assert_eq!(
            refusals.of("uid"),
            BTreeMap::from([(worker(1), quota.to_owned())])
        );
        refusals.forget("uid");
        assert!(refusals.of("uid").is_empty());
    }

    /// A quota refuses worker 1: the next reconcile's `Created` condition says so (written
    /// before that reconcile creates it), and the creation takes the refusal back.
    #[tokio::test]
    async fn the_created_condition_names_the_pods_a_quota_refused() {
        let tfjob = job(TF_JOB);
        let quota = "pods \"mnist-worker-1\" is forbidden: exceeded quota: one-pod, \
                     requested: pods=1, used: pods=1, limited: pods=1";
        let mut answer = cluster(&tfjob);
        let mut refuse = true;
        let server_answer = move |sent: &Sent| {
            if sent.method == Method::POST
                && sent.body["metadata"]["name"] == "mnist-worker-1"
                && sent.path().ends_with("/pods")
                // Refused once; by the retry, the quota was raised.
                && std::mem::take(&mut refuse)
            {
                let mut body = status_body(403, "Forbidden");
                body["message"] = json!(quota);
                return (StatusCode::FORBIDDEN, body);
            }
            answer(sent)
        };
        let (ctx, handle) = context();
        let server = serve(handle, server_answer);
        let now = Timestamp::from_second(1_735_689_600).expect("a time");
        let status_of = |sent: &[Sent]| {
            sent.iter()
                .rfind(|sent| sent.path().ends_with("/status"))
                .map(|sent| sent.body["status"].clone())
        };

        let first = reconcile_at(
            JobKind::TFJob,
            &object(TF_JOB),
            &ctx,
            &children_holding(vec![], vec![]),
            now,
        )
        .await;
        assert!(first.is_err(), "the refused creation is retried: {first:?}");
        assert_eq!(
            ctx.refusals.of("job-uid"),
            BTreeMap::from([(worker(1), quota.to_owned())])
        );
        let created = json!({"conditions": [{"type": "Created", "status": "True",
            "reason": "TFJobCreated", "message": "TFJob mnist is created."}]});
        let everything_but_worker_1 = children_holding(
            vec![
                owned_pod(&tfjob, "mnist-chief-0"),
                owned_pod(&tfjob, "mnist-worker-0"),
            ],
            ["mnist-chief-0", "mnist-worker-0", "mnist-worker-1"]
                .map(|name| owned_service(&tfjob, name))
                .to_vec(),
        );
        let second = reconcile_at(
            JobKind::TFJob,
            &with_status(object(TF_JOB), &created),
            &ctx,
            &everything_but_worker_1,
            now,
        )
        .await;
        assert!(second.is_ok(), "{second:?}");
        assert!(ctx.refusals.of("job-uid").is_empty(), "created at last");
        let (sent, events) = finish(ctx, server).await;
        let status = status_of(&sent).expect("a status written");
        assert_eq!(status["conditions"][0]["type"], "Created");
        assert_eq!(
            status["conditions"][0]["message"],
            format!("TFJob mnist is created. Pending: mnist-worker-1 cannot be created ({quota}).")
        );
        assert!(
            events
                .iter()
                .any(|event| event.body["reason"] == "TFJobPending"
                    && event.body["note"] == format!("mnist-worker-1 cannot be created ({quota})")),
            "{events:#?}"
        );
    }
}
