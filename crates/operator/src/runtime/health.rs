//! What `/readyz` and `/healthz` report.
//!
//! - **Ready** once the process can do its part: a leader (or an operator without leader
//!   election) once every controller's job cache has had its first full list; a standby while
//!   it waits for the lease (it is ready to take over, and a Deployment's rollout must not wait
//!   for it to become leader). Not ready while starting, syncing or shutting down.
//! - **Healthy** while no reconcile has been running for longer than `WEDGED_AFTER` (ten
//!   minutes): a reconcile makes a bounded number of API calls, each with a timeout, so one that
//!   runs this long is stuck and the kubelet should restart the process. That the endpoint
//!   answers at all shows that the runtime is not blocked.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::watch;

/// How long a reconcile may run before `/healthz` reports the process as wedged.
pub(crate) const WEDGED_AFTER: Duration = Duration::from_secs(600);

/// Where the process is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Connecting and binding; nothing runs yet.
    Starting,
    /// Waiting for the leader lease (leader election only).
    Standby,
    /// Controllers started; their job caches are being listed.
    Syncing,
    /// Controllers running with synced caches.
    Running,
    /// Shutting down: in-flight reconciles finish, nothing new starts.
    Stopping,
}

/// The health state shared by the controllers and the probe endpoints.
#[derive(Debug)]
pub struct Health {
    phase: watch::Sender<Phase>,
    next_reconcile: AtomicU64,
    /// The reconciles running now: when each started, and its job (`TFJob ml/mnist`).
    in_flight: Mutex<BTreeMap<u64, (Instant, String)>>,
}

impl Default for Health {
    fn default() -> Self {
        Health {
            phase: watch::Sender::new(Phase::Starting),
            next_reconcile: AtomicU64::new(0),
            in_flight: Mutex::new(BTreeMap::new()),
        }
    }
}

impl Health {
    /// Moves to `phase`.
    pub(crate) fn set_phase(&self, phase: Phase) {
        self.phase.send_replace(phase);
    }

    /// The controllers' job caches have had their first list: a syncing process is running
    /// (one already stopping stays so).
    pub(crate) fn caches_synced(&self) {
        self.phase.send_if_modified(|phase| {
            let syncing = *phase == Phase::Syncing;
            if syncing {
                *phase = Phase::Running;
            }
            syncing
        });
    }

    /// The current phase.
    #[must_use]
    pub(crate) fn phase(&self) -> Phase {
        *self.phase.borrow()
    }

    /// The phase, as it changes.
    #[cfg(test)]
    #[must_use]
    pub(crate) fn subscribe(&self) -> watch::Receiver<Phase> {
        self.phase.subscribe()
    }

    /// `Ok` when ready, else why not.
    pub(crate) fn readiness(&self) -> Result<(), &'static str> {
        match self.phase() {
            Phase::Standby | Phase::Running => Ok(()),
            Phase::Starting => Err("starting"),
            Phase::Syncing => Err("the controllers' caches are syncing"),
            Phase::Stopping => Err("shutting down"),
        }
    }

    /// `Ok` when healthy as of `now`, else why not.
    pub(crate) fn liveness(&self, now: Instant) -> Result<(), String> {
        let in_flight = self
            .in_flight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let oldest = in_flight.values().min_by_key(|(started, _)| *started);
        match oldest {
            Some((started, job)) if now.saturating_duration_since(*started) > WEDGED_AFTER => {
                Err(format!(
                    "the reconcile of {job} has been running for {}s (more than {}s): wedged",
                    now.saturating_duration_since(*started).as_secs(),
                    WEDGED_AFTER.as_secs()
                ))
            }
            _ => Ok(()),
        }
    }

    /// A reconcile of `job` starts at `started`; it counts as running until the returned guard
    /// is dropped.
    #[must_use]
    pub(crate) fn reconcile_started(&self, job: String, started: Instant) -> InFlight<'_> {
        let id = self.next_reconcile.fetch_add(1, Ordering::Relaxed);
        self.in_flight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(id, (started, job));
        InFlight { health: self, id }
    }
}

/// A reconcile in flight, tracked by [`Health`] until dropped.
#[derive(Debug)]
pub(crate) struct InFlight<'a> {
    health: &'a Health,
    id: u64,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.health
            .in_flight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standby_and_synced_leaders_are_ready_the_rest_not() {
        let health = Health::default();
        assert_eq!(health.readiness(), Err("starting"));
        health.set_phase(Phase::Standby);
        assert_eq!(health.readiness(), Ok(()));
        health.set_phase(Phase::Syncing);
        assert_eq!(
            health.readiness(),
            Err("the controllers' caches are syncing")
        );
        health.caches_synced();
        assert_eq!(health.phase(), Phase::Running);
        assert_eq!(health.readiness(), Ok(()));
        health.set_phase(Phase::Stopping);
        assert_eq!(health.readiness(), Err("shutting down"));
        health.caches_synced();
        assert_eq!(
            health.phase(),
            Phase::Stopping,
            "a late sync does not undo a stop"
        );
    }

    #[test]
    fn a_reconcile_running_past_the_limit_makes_the_process_unhealthy() {
        let health = Health::default();
        let start = Instant::now();
        let in_flight = health.reconcile_started("TFJob ml/mnist".to_owned(), start);
        assert_eq!(health.liveness(start + WEDGED_AFTER), Ok(()));
        assert_eq!(
            health.liveness(start + WEDGED_AFTER + Duration::from_secs(1)),
            Err(
                "the reconcile of TFJob ml/mnist has been running for 601s (more than 600s): wedged"
                    .to_owned()
            )
        );
        drop(in_flight);
        assert_eq!(
            health.liveness(start + WEDGED_AFTER + Duration::from_secs(1)),
            Ok(())
        );
    }
}
