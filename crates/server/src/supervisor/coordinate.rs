//! The supervisor as its runs' [`Coordinator`]: the admission queue's word inside each run's
//! reservation, and what the log says of admissions and restarts.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use trainctl_api::TrainingJob;
use trainctl_engine::reconcile::Transition;
use trainctl_local::kubelet::admission::{Amounts, QueueVerdict};
use trainctl_local::runner::{Coordinator, ResourceHold};

use super::{Supervisor, SupervisorError};
use crate::journal;
use crate::queue::Decision;

impl Supervisor {
    /// Reads the restarts of the job `uid`, taken over from a server that died, from now on:
    /// those its replicas made before are on record.
    pub(super) fn adopted(&self, uid: &str) -> Result<(), SupervisorError> {
        let store = self.store();
        let Some(record) = store.job_by_uid(uid)? else {
            return Ok(());
        };
        let counts: HashMap<String, i32> = store
            .replicas(uid)?
            .into_iter()
            .map(|replica| {
                let pod = format!("{}-{}", record.name, replica.name());
                (pod, replica.restarts)
            })
            .collect();
        drop(store);
        self.journal.adopted(uid, counts);
        Ok(())
    }

    /// Reads the admitted jobs' new restarts every [`journal::READ_EVERY`], for the log, while
    /// the supervisor lives.
    pub(super) fn read_restarts(self: &Arc<Self>) {
        let supervisor = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(journal::READ_EVERY).await;
                let Some(supervisor) = supervisor.upgrade() else {
                    return;
                };
                supervisor.journal.read(&supervisor.store(), None);
            }
        });
    }
}

impl Coordinator for Supervisor {
    fn may_try(&self, uid: &str) -> bool {
        self.queue.may_try(uid)
    }

    fn admission(
        &self,
        uid: &str,
        request: &Amounts,
        free: &Amounts,
        hold: Option<&ResourceHold>,
    ) -> QueueVerdict {
        match self.queue.decide(uid, request, free, hold.is_some()) {
            Decision::Take(admitted) => {
                if let Some(waited) = admitted.waited {
                    self.metrics.admitted(waited);
                }
                if let Some(hold) = hold {
                    self.journal.admitted(uid, hold, &admitted);
                }
                QueueVerdict::Take
            }
            Decision::Short => QueueVerdict::WaitForResources,
            Decision::Behind => QueueVerdict::WaitInQueue,
            Decision::Quota(why) => QueueVerdict::WaitForQuota(why),
            Decision::NeverFitsQuota(why) => QueueVerdict::NeverFitsQuota(why),
        }
    }

    fn turn(&self, uid: &str) -> Option<Arc<Notify>> {
        self.queue.turn(uid)
    }

    fn reconciled(&self, job: &TrainingJob, transitions: &[Transition], took: Duration) {
        self.metrics.reconciled(job, transitions, took);
    }
}
