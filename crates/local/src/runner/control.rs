//! What steers a run from outside: requests to stop it, and the queue that orders admission
//! among a server's jobs.

use std::sync::Arc;
use std::time::Duration;

use nix::sys::signal::Signal;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::{Notify, mpsc};
use trainctl_api::TrainingJob;
use trainctl_engine::reconcile::Transition;

use crate::kubelet::admission::{Amounts, QueueVerdict, ResourceHold};

/// Why a run is asked to end before its job does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopRequest {
    /// The user stopped `trainctl run` (Ctrl-C is `SIGINT`): the job fails with reason
    /// `Interrupted`.
    Interrupt(Signal),
    /// `runPolicy.suspend` was set: the replicas stop, the job is `Suspended` and gives back its
    /// resources; resuming it runs it again.
    Suspend,
    /// The job is being deleted: the replicas stop; the job's records go afterwards.
    Delete,
    /// The server is shutting down: the replicas stop and the job stays as it is, unfinished, to
    /// run again when a server starts.
    Shutdown,
}

/// Where a run's stop requests come from.
#[derive(Debug)]
pub struct Stops {
    requests: mpsc::UnboundedReceiver<StopRequest>,
}

impl Stops {
    /// Stop requests sent through the returned sender.
    #[must_use]
    pub fn channel() -> (mpsc::UnboundedSender<StopRequest>, Stops) {
        let (sender, requests) = mpsc::unbounded_channel();
        (sender, Stops { requests })
    }

    /// `SIGINT`, `SIGTERM` and `SIGHUP` of this process, as [`StopRequest::Interrupt`]. Must be
    /// called within a Tokio runtime.
    pub fn signals() -> std::io::Result<Stops> {
        let (sender, stops) = Stops::channel();
        let mut interrupt = signal(SignalKind::interrupt())?;
        let mut terminate = signal(SignalKind::terminate())?;
        let mut hangup = signal(SignalKind::hangup())?;
        tokio::spawn(async move {
            loop {
                let received = tokio::select! {
                    _ = interrupt.recv() => Signal::SIGINT,
                    _ = terminate.recv() => Signal::SIGTERM,
                    _ = hangup.recv() => Signal::SIGHUP,
                };
                if sender.send(StopRequest::Interrupt(received)).is_err() {
                    return;
                }
            }
        });
        Ok(stops)
    }

    /// The next request; never resolves once every sender is gone.
    pub(super) async fn recv(&mut self) -> StopRequest {
        match self.requests.recv().await {
            Some(request) => request,
            None => std::future::pending().await,
        }
    }
}

/// What a server gives each of its runs: the admission queue, and an ear for what each reconcile
/// did (metrics).
///
/// The queue orders jobs by priority, then submission. The job at its head takes its resources
/// as soon as they are free; a job behind it may take them first only when that delays no job
/// ahead of it (backfill), which the queue decides inside the store's reservation, where it sees
/// exactly what is free. Jobs behind the head try only when the queue says they may: a queue of
/// a thousand jobs costs no more per admission than a queue of one.
pub trait Coordinator: Send + Sync {
    /// Whether the job `uid` is to try for its resources now (its first try, at the head of the
    /// queue, when the queue has found it may start before the head, or when it is not queued);
    /// `false` keeps it waiting in the queue without touching the store.
    fn may_try(&self, uid: &str) -> bool;

    /// Whether the job `uid`, which asks for `request`, takes its resources now, with `free`
    /// free on the machine; `hold` is what it takes when it fits what is free, `None` when it
    /// does not. Called inside the store's reservation: no other job takes resources until the
    /// answer is recorded. On [`QueueVerdict::Take`] the job has left the queue.
    fn admission(
        &self,
        uid: &str,
        request: &Amounts,
        free: &Amounts,
        hold: Option<&ResourceHold>,
    ) -> QueueVerdict;

    /// What wakes the job `uid` when it may be its turn (it reached the head of the queue, it
    /// may start before the head, or resources were given back); `None` when it does not wait
    /// in a queue.
    fn turn(&self, uid: &str) -> Option<Arc<Notify>>;

    /// A reconcile of `job` took `took` and made these transitions.
    fn reconciled(&self, job: &TrainingJob, transitions: &[Transition], took: Duration);
}
