//! Leader election on a `coordination.k8s.io/v1` Lease (`--leader-elect`), with client-go's
//! semantics (kube-rs has no elector of its own):
//!
//! - **acquire** the lease when it does not exist (created with `leaseTransitions: 0`), when it
//!   has no holder, or when its record has not changed for a lease duration *as observed by
//!   this process* (its own monotonic clock, so clock skew between nodes cannot make a live
//!   holder look expired); taking it over from another holder adds one to `leaseTransitions`;
//! - **renew** every retry period; a leader that cannot renew within the renew deadline, or
//!   finds another holder, has lost the lease and must stop reconciling;
//! - **release** on shutdown, once the controllers have stopped: the holder is cleared and the
//!   duration set to 1 s, so that a standby takes over at its next try instead of waiting out
//!   the lease;
//! - every write is a `replace` carrying the `resourceVersion` just read: of two candidates
//!   racing for the lease, one gets a conflict.
//!
//! The holder identity is the pod's name (or host name) and a random suffix, so that a process
//! restarted in the same pod never mistakes the previous process's lease for its own.

use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Client;
use kube::api::{Api, PostParams};
use tokio::time::Instant;

/// A wall clock, for the times written into the lease (injectable for tests).
pub(crate) type Clock = Arc<dyn Fn() -> Timestamp + Send + Sync>;

/// Where the lease is, who we are, and the timing (client-go's and controller-runtime's
/// defaults: 15 s lease, 10 s renew deadline, 2 s retry period).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseSettings {
    /// The lease's namespace (`--leader-election-namespace`).
    pub namespace: String,
    /// The lease's name (`--leader-election-id`).
    pub name: String,
    /// This process's holder identity.
    pub identity: String,
    /// How long a standby waits, after the lease last changed, before taking it over.
    pub lease_duration: Duration,
    /// How long a leader keeps trying to renew before it gives up leadership.
    pub renew_deadline: Duration,
    /// The time between two tries (to acquire, or to renew).
    pub retry_period: Duration,
}

impl LeaseSettings {
    /// The lease `namespace/name` held as `identity`, with the default timing.
    #[must_use]
    pub fn new(namespace: String, name: String, identity: String) -> LeaseSettings {
        LeaseSettings {
            namespace,
            name,
            identity,
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

/// A fresh holder identity: `POD_NAME`, else `HOSTNAME`, else the kernel's host name, then `_`
/// and a random UUID (as client-go-based operators do).
#[must_use]
pub fn identity() -> String {
    let host = ["POD_NAME", "HOSTNAME"]
        .into_iter()
        .find_map(|variable| std::env::var(variable).ok().filter(|name| !name.is_empty()))
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|name| name.trim().to_owned())
                .filter(|name| !name.is_empty())
        })
        .unwrap_or_else(|| "trainctl-operator".to_owned());
    format!("{host}_{}", uuid::Uuid::new_v4())
}

/// Why a leader stopped being one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LostLease {
    /// Renewals kept failing past the renew deadline.
    #[error("could not renew the lease {lease} within {deadline:?}: {last_error}")]
    RenewDeadline {
        /// `namespace/name` of the lease.
        lease: String,
        /// The renew deadline.
        deadline: Duration,
        /// What the last try ran into.
        last_error: String,
    },
    /// Another process holds the lease now.
    #[error("the lease {lease} is held by {holder} now")]
    TakenOver {
        /// `namespace/name` of the lease.
        lease: String,
        /// The new holder.
        holder: String,
    },
}

/// What a try found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Attempt {
    /// This process holds the lease (acquired or renewed).
    Leader,
    /// Another process holds the lease and it is live.
    HeldBy(String),
}

/// The lease record as last seen, and when it was first seen so (monotonic).
#[derive(Debug, Clone)]
struct Observation {
    spec: LeaseSpec,
    since: Instant,
}

/// One candidate for the lease.
pub(crate) struct Elector {
    api: Api<Lease>,
    settings: LeaseSettings,
    clock: Clock,
    observed: Option<Observation>,
}

impl std::fmt::Debug for Elector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Elector")
            .field("settings", &self.settings)
            .field("leader", &self.is_leader())
            .finish_non_exhaustive()
    }
}

impl Elector {
    /// A candidate for the lease of `settings`, writing times from the system clock.
    #[must_use]
    pub(crate) fn new(client: Client, settings: LeaseSettings) -> Elector {
        Elector::with_clock(client, settings, Arc::new(Timestamp::now))
    }

    /// A candidate writing times from `clock`.
    #[must_use]
    pub(crate) fn with_clock(client: Client, settings: LeaseSettings, clock: Clock) -> Elector {
        Elector {
            api: Api::namespaced(client, &settings.namespace),
            settings,
            clock,
            observed: None,
        }
    }

    /// `namespace/name` of the lease.
    #[must_use]
    pub(crate) fn lease(&self) -> String {
        format!("{}/{}", self.settings.namespace, self.settings.name)
    }

    /// Whether the lease, as last seen, is held by this process.
    #[must_use]
    pub(crate) fn is_leader(&self) -> bool {
        self.observed.as_ref().is_some_and(|observed| {
            observed.spec.holder_identity.as_deref() == Some(self.settings.identity.as_str())
        })
    }

    /// One try to acquire the lease, or to renew it when held: client-go's
    /// `tryAcquireOrRenew`.
    pub(crate) async fn try_acquire_or_renew(&mut self) -> Result<Attempt, kube::Error> {
        let now = (self.clock)();
        let Some(mut lease) = self.api.get_opt(&self.settings.name).await? else {
            return self.create(now).await;
        };
        let current = lease.spec.clone().unwrap_or_default();
        self.observe(&current);
        let holder = current.holder_identity.clone().unwrap_or_default();
        if !holder.is_empty() && holder != self.settings.identity && !self.observed_expired() {
            return Ok(Attempt::HeldBy(holder));
        }
        lease.spec = Some(self.record(&current, now));
        let written = self
            .api
            .replace(&self.settings.name, &PostParams::default(), &lease)
            .await?;
        self.observe(&written.spec.unwrap_or_default());
        Ok(Attempt::Leader)
    }

    /// Creates the lease, held by this process.
    async fn create(&mut self, now: Timestamp) -> Result<Attempt, kube::Error> {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(self.settings.name.clone()),
                namespace: Some(self.settings.namespace.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(self.settings.identity.clone()),
                lease_duration_seconds: Some(self.lease_duration_seconds()),
                acquire_time: Some(MicroTime(now)),
                renew_time: Some(MicroTime(now)),
                lease_transitions: Some(0),
                ..LeaseSpec::default()
            }),
        };
        match self.api.create(&PostParams::default(), &lease).await {
            Ok(created) => {
                self.observe(&created.spec.unwrap_or_default());
                Ok(Attempt::Leader)
            }
            // Another candidate created it first; the next try reads who.
            Err(kube::Error::Api(status)) if status.is_already_exists() => {
                Ok(Attempt::HeldBy(String::new()))
            }
            Err(error) => Err(error),
        }
    }

    /// The record this process writes over `current`: renewing keeps the acquire time and the
    /// transitions; taking over starts a new acquire time and counts one more transition.
    fn record(&self, current: &LeaseSpec, now: Timestamp) -> LeaseSpec {
        let renewing = current.holder_identity.as_deref() == Some(self.settings.identity.as_str());
        let transitions = current.lease_transitions.unwrap_or(0);
        LeaseSpec {
            holder_identity: Some(self.settings.identity.clone()),
            lease_duration_seconds: Some(self.lease_duration_seconds()),
            acquire_time: if renewing {
                current.acquire_time.clone()
            } else {
                Some(MicroTime(now))
            },
            renew_time: Some(MicroTime(now)),
            lease_transitions: Some(if renewing {
                transitions
            } else {
                transitions.saturating_add(1)
            }),
            ..LeaseSpec::default()
        }
    }

    fn lease_duration_seconds(&self) -> i32 {
        i32::try_from(self.settings.lease_duration.as_secs()).unwrap_or(i32::MAX)
    }

    /// Notes the record read; a changed record restarts the expiry count.
    fn observe(&mut self, spec: &LeaseSpec) {
        let unchanged = self
            .observed
            .as_ref()
            .is_some_and(|observed| observed.spec == *spec);
        if !unchanged {
            self.observed = Some(Observation {
                spec: spec.clone(),
                since: Instant::now(),
            });
        }
    }

    /// Whether the observed record has stayed the same for a whole lease duration.
    fn observed_expired(&self) -> bool {
        self.observed
            .as_ref()
            .is_some_and(|observed| observed.since.elapsed() > self.settings.lease_duration)
    }

    /// Tries every retry period until this process holds the lease.
    pub(crate) async fn acquire(&mut self) {
        let mut last_holder = None;
        loop {
            match self.try_acquire_or_renew().await {
                Ok(Attempt::Leader) => {
                    tracing::info!(lease = %self.lease(), identity = %self.settings.identity, "became the leader");
                    return;
                }
                Ok(Attempt::HeldBy(holder)) => {
                    if last_holder.as_ref() != Some(&holder) {
                        tracing::info!(lease = %self.lease(), %holder, "standing by: another process holds the lease");
                        last_holder = Some(holder);
                    }
                }
                Err(error) => {
                    tracing::warn!(lease = %self.lease(), %error, "cannot acquire the lease; trying again");
                }
            }
            tokio::time::sleep(self.settings.retry_period).await;
        }
    }

    /// Renews the lease every retry period for as long as this process holds it; returns why
    /// it stopped being the leader.
    pub(crate) async fn hold(&mut self) -> LostLease {
        loop {
            tokio::time::sleep(self.settings.retry_period).await;
            let deadline = Instant::now() + self.settings.renew_deadline;
            let mut last_error;
            loop {
                match tokio::time::timeout_at(deadline, self.try_acquire_or_renew()).await {
                    Ok(Ok(Attempt::Leader)) => break,
                    Ok(Ok(Attempt::HeldBy(holder))) => {
                        return LostLease::TakenOver {
                            lease: self.lease(),
                            holder,
                        };
                    }
                    Ok(Err(error)) => {
                        tracing::warn!(lease = %self.lease(), %error, "cannot renew the lease");
                        last_error = error.to_string();
                    }
                    Err(_) => last_error = "the request timed out".to_owned(),
                }
                if Instant::now() + self.settings.retry_period >= deadline {
                    return LostLease::RenewDeadline {
                        lease: self.lease(),
                        deadline: self.settings.renew_deadline,
                        last_error,
                    };
                }
                tokio::time::sleep(self.settings.retry_period).await;
            }
        }
    }

    /// Gives the lease up, if this process holds it: clears the holder and shortens the
    /// duration to 1 s. Returns whether it was released.
    pub(crate) async fn release(&mut self) -> Result<bool, kube::Error> {
        if !self.is_leader() {
            return Ok(false);
        }
        let Some(mut lease) = self.api.get_opt(&self.settings.name).await? else {
            return Ok(false);
        };
        let current = lease.spec.clone().unwrap_or_default();
        if current.holder_identity.as_deref() != Some(self.settings.identity.as_str()) {
            self.observe(&current);
            return Ok(false);
        }
        let now = MicroTime((self.clock)());
        lease.spec = Some(LeaseSpec {
            holder_identity: None,
            lease_duration_seconds: Some(1),
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            lease_transitions: current.lease_transitions,
            ..LeaseSpec::default()
        });
        let written = self
            .api
            .replace(&self.settings.name, &PostParams::default(), &lease)
            .await?;
        self.observe(&written.spec.unwrap_or_default());
        tracing::info!(lease = %self.lease(), "released the lease");
        Ok(true)
    }
}

#[cfg(test)]
pub(crate) mod tests;
