//! The admission queue: which waiting job may take its resources next.
//!
//! The policy, as `docs/server.md` states it ("Queue order and backfill"): jobs wait in order of
//! priority (higher first), then of submission (first come, first served). The job at the head
//! takes its resources as soon as they are free. A job behind it may start first when it would
//! delay no job ahead of it ([`backfill`](crate::backfill) has the rule): it must fit in what the
//! head cannot use now, and every job it overtakes keeps its whole request reserved out of the
//! machine's capacity, against the running jobs that overtook it. A job leaves the queue when it
//! is admitted, suspended, deleted or fails; a job that overtook others counts against them
//! until its run ends.
//!
//! With quotas (`docs/server.md`, "Teams and quotas"), the head-of-line rule holds per
//! namespace for quota: a job whose namespace's `ResourceQuota` cannot hold it now (or that is
//! behind such a job of its namespace) is held by its quota, and leaves the machine's queue
//! meanwhile: it reserves nothing against other jobs, and the machine's head is the first job
//! not held ([`quota`] has the rule). A job that can never fit its quota fails at once.
//!
//! Only the head is woken when it becomes the head or when resources are given back; when it
//! does not fit, its try finds which jobs behind it may start (with what it saw free, inside the
//! store's reservation) and wakes those. The other jobs sleep and never touch the store, so a
//! queue of a thousand jobs costs no more per admission than the one walk through it in memory.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use trainctl_api::quota::{Quota, Usage};
use trainctl_engine::reconcile::Resource;
use trainctl_local::kubelet::admission::{Amounts, amount_words};

use crate::backfill::{self, Blocked, Queued};

mod quota;

/// One waiting job.
#[derive(Debug, Clone)]
struct Entry {
    uid: String,
    /// `tfjob/default/mnist`, as messages name it.
    label: String,
    /// Its namespace.
    namespace: String,
    /// What it counts against its namespace's quotas once admitted.
    charge: Usage,
    /// Why its namespace's quota holds it now; `None` when it is in the machine's queue.
    quota_hold: Option<String>,
    priority: i32,
    /// Submission order; unique to this stay in the queue.
    seq: u64,
    /// When it was queued.
    since: Instant,
    /// Woken when it may be its turn.
    turn: Arc<Notify>,
    /// What it asks for, once it has tried.
    request: Option<Amounts>,
    /// What the running jobs that overtook it hold together.
    overtaken_by: Amounts,
    /// Whether it is to try at its next wake-up though it is not the head: its first try, or
    /// the head found that it may start now.
    may_try: bool,
    /// Why it could not start before the jobs ahead at its last try.
    blocked: Option<Blocking>,
}

impl Entry {
    fn as_queued(&self) -> Queued {
        Queued {
            request: self.request,
            overtaken_by: self.overtaken_by,
        }
    }
}

/// Why a job behind the head did not start at its last try.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Blocking {
    /// Too little is free: `(resource, wanted, free)`.
    NotFree(Vec<(Resource, u64, u64)>),
    /// Starting would have delayed the job of this `seq`.
    WouldDelay(u64),
}

/// A running job that started by overtaking queued jobs.
#[derive(Debug, Clone)]
struct Overtaker {
    /// What it holds.
    holds: Amounts,
    /// The `seq`s of the stays in the queue it overtook.
    overtook: HashSet<u64>,
}

/// The queue and the jobs that overtook it.
#[derive(Debug, Default)]
struct State {
    /// What the machine has in all.
    capacity: Amounts,
    /// In order: the head first.
    entries: Vec<Entry>,
    /// The running jobs that started by backfill, by uid.
    overtakers: HashMap<String, Overtaker>,
    /// The quotas of each namespace that has any.
    quotas: HashMap<String, Vec<Quota>>,
    /// What each admitted job counts against its namespace's quotas, by uid.
    charged: HashMap<String, Charged>,
}

/// An admitted job as its namespace's quotas count it.
#[derive(Debug, Clone)]
struct Charged {
    /// `tfjob/default/mnist`, as messages name it.
    label: String,
    /// Its namespace.
    namespace: String,
    /// What it counts.
    usage: Usage,
}

/// What the queue decided for a job that asked to take its resources.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// It takes them, and has left the queue.
    Take(Admitted),
    /// It is the head, and does not fit what is free.
    Short,
    /// It is behind others and may not start before them.
    Behind,
    /// Its namespace's quota holds it, for this reason.
    Quota(String),
    /// It asks for more than its namespace's quota allows in all, for this reason.
    NeverFitsQuota(String),
}

/// A job to queue: who it is, and what it counts against its namespace's quotas.
#[derive(Debug, Clone)]
pub struct Waiting<'a> {
    /// Its uid.
    pub uid: &'a str,
    /// `tfjob/default/mnist`, as messages name it.
    pub label: &'a str,
    /// Its priority (higher first).
    pub priority: i32,
    /// Its submission order, unique to this stay in the queue.
    pub seq: u64,
    /// Its namespace.
    pub namespace: &'a str,
    /// What it counts against its namespace's quotas.
    pub charge: Usage,
}

/// How a job was admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Admitted {
    /// How long it waited in the queue; `None` when it was not queued.
    pub waited: Option<Duration>,
    /// Whether it started before jobs ahead of it (backfill).
    pub backfilled: bool,
}

/// The queue, shared by the server and every waiting run.
#[derive(Debug, Default)]
pub struct Queue {
    state: Mutex<State>,
}

impl Queue {
    /// An empty queue for a machine with `capacity` in all.
    #[must_use]
    pub fn new(capacity: Amounts) -> Queue {
        Queue {
            state: Mutex::new(State {
                capacity,
                ..State::default()
            }),
        }
    }

    /// Queues a job behind every job of its priority or higher already queued; how many jobs
    /// are ahead of it.
    pub fn push(&self, job: Waiting<'_>) -> usize {
        let Waiting {
            uid,
            label,
            priority,
            seq,
            namespace,
            charge,
        } = job;
        let mut state = self.lock();
        if let Some(at) = state.entries.iter().position(|entry| entry.uid == uid) {
            return at;
        }
        let at = state
            .entries
            .iter()
            .position(|entry| {
                (priority, std::cmp::Reverse(seq)) > (entry.priority, std::cmp::Reverse(entry.seq))
            })
            .unwrap_or(state.entries.len());
        state.entries.insert(
            at,
            Entry {
                uid: uid.to_owned(),
                label: label.to_owned(),
                namespace: namespace.to_owned(),
                charge,
                quota_hold: None,
                priority,
                seq,
                since: Instant::now(),
                turn: Arc::new(Notify::new()),
                request: None,
                overtaken_by: Amounts::default(),
                may_try: true,
                blocked: None,
            },
        );
        state.refresh_quota_holds();
        if state.machine_place(at) == Some(0) {
            state.wake_head();
        }
        at
    }

    /// How many jobs wait.
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// Whether no job waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What wakes the job `uid` when it may be its turn; `None` when it is not queued.
    pub fn turn(&self, uid: &str) -> Option<Arc<Notify>> {
        self.lock()
            .entries
            .iter()
            .find(|entry| entry.uid == uid)
            .map(|entry| Arc::clone(&entry.turn))
    }

    /// How many jobs are ahead of the job `uid` in the machine's queue (in the whole queue when
    /// its quota holds it); `None` when it is not queued.
    pub fn position(&self, uid: &str) -> Option<u32> {
        let state = self.lock();
        let at = state.entries.iter().position(|entry| entry.uid == uid)?;
        let place = state.machine_place(at).unwrap_or(at);
        Some(u32::try_from(place).unwrap_or(u32::MAX))
    }

    /// Whether the job `uid` is to try for its resources now: when it is not queued, at the
    /// head, at its first try, or when the head found that it may start now.
    pub fn may_try(&self, uid: &str) -> bool {
        let state = self.lock();
        match state.entries.iter().position(|entry| entry.uid == uid) {
            None => true,
            Some(at) if state.machine_place(at) == Some(0) => true,
            Some(at) => state.entries[at].may_try,
        }
    }

    /// Decides whether the job `uid`, which asks for `request`, takes it now, with `free` free
    /// on the machine; `fits` is whether `request` fits what is free. To be called where no
    /// other job takes resources meanwhile (inside the store's reservation). A job not queued
    /// takes what fits, as a head does; a head that does not fit wakes the jobs behind it that
    /// may start now.
    pub fn decide(&self, uid: &str, request: &Amounts, free: &Amounts, fits: bool) -> Decision {
        let mut state = self.lock();
        let Some(at) = state.entries.iter().position(|entry| entry.uid == uid) else {
            // Not queued (a job taken over from a server that died, admitted afresh).
            return if fits {
                Decision::Take(Admitted {
                    waited: None,
                    backfilled: false,
                })
            } else {
                Decision::Short
            };
        };
        let entry = &mut state.entries[at];
        entry.request = Some(*request);
        entry.may_try = false;
        entry.blocked = None;
        if let Some(never) = state.never_fits_quota(at) {
            return Decision::NeverFitsQuota(never);
        }
        state.refresh_quota_holds();
        let machine = state.machine();
        let Some(place) = machine.iter().position(|&index| index == at) else {
            let why = state.entries[at].quota_hold.clone().unwrap_or_default();
            return Decision::Quota(why);
        };
        if place == 0 {
            if fits {
                let head = state.entries.remove(at);
                state.charge(&head);
                state.wake_head();
                return Decision::Take(Admitted {
                    waited: Some(head.since.elapsed()),
                    backfilled: false,
                });
            }
            state.wake_starters(free);
            return Decision::Short;
        }
        let ahead: Vec<Queued> = machine[..place]
            .iter()
            .map(|&index| state.entries[index].as_queued())
            .collect();
        let blocking = match backfill::may_start(&state.capacity, free, &ahead, request) {
            Ok(()) if fits => return state.overtake(at, &machine[..place]),
            Ok(()) => Some(Blocking::NotFree(Vec::new())),
            Err(Blocked::NotFree(short)) => Some(Blocking::NotFree(short)),
            Err(Blocked::WouldDelay(ahead_place)) => Some(Blocking::WouldDelay(
                state.entries[machine[ahead_place]].seq,
            )),
            Err(Blocked::NotTried(_)) => None,
        };
        state.entries[at].blocked = blocking;
        Decision::Behind
    }

    /// The run of the job `uid` is over, admitted or not: it leaves the queue if it waited
    /// there, and no longer counts against the jobs it overtook. The head tries again: what the
    /// job held, or the place it kept, may let the head or a job behind it start.
    pub fn ended(&self, uid: &str) {
        let mut state = self.lock();
        state.entries.retain(|entry| entry.uid != uid);
        if let Some(overtaker) = state.overtakers.remove(uid) {
            for entry in &mut state.entries {
                if overtaker.overtook.contains(&entry.seq) {
                    entry.overtaken_by = entry.overtaken_by.minus(&overtaker.holds);
                }
            }
        }
        state.charged.remove(uid);
        state.refresh_quota_holds();
        state.wake_head();
    }

    /// Why the job `uid`, queued behind others, waits: `queued behind 2 jobs`, and what keeps it
    /// from starting before them, as of its last try (`; would delay tfjob/default/h at the head
    /// of the queue`); only the jobs of the machine's queue count (not those held by their
    /// quota). `None` at the head, when held by its quota, or when not queued.
    pub fn why_behind(&self, uid: &str) -> Option<String> {
        let state = self.lock();
        let index = state.entries.iter().position(|entry| entry.uid == uid)?;
        let machine = state.machine();
        let at = machine.iter().position(|&i| i == index)?;
        if at == 0 {
            return None;
        }
        let entries: Vec<&Entry> = machine.iter().map(|&i| &state.entries[i]).collect();
        let them = if at == 1 { "it" } else { "them" };
        let why = match &entries[at].blocked {
            Some(Blocking::NotFree(short)) if !short.is_empty() => {
                let wants: Vec<String> = short
                    .iter()
                    .map(|&(resource, wanted, free)| {
                        format!(
                            "{}, {} free",
                            amount_words(resource, wanted),
                            amount_words(resource, free)
                        )
                    })
                    .collect();
                format!(
                    "; too large to start before {them}: wants {}",
                    wants.join(" and ")
                )
            }
            Some(Blocking::WouldDelay(seq)) => {
                match entries[..at].iter().position(|e| e.seq == *seq) {
                    Some(0) => format!(
                        "; would delay {} at the head of the queue",
                        entries[0].label
                    ),
                    Some(place) => format!(
                        "; would delay {}, {} in the queue",
                        entries[place].label,
                        ordinal(place + 1)
                    ),
                    None => String::new(),
                }
            }
            Some(Blocking::NotFree(_)) | None => String::new(),
        };
        let jobs = if at == 1 { "job" } else { "jobs" };
        Some(format!("queued behind {at} {jobs}{why}"))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl State {
    /// The job at `at`, behind the head, starts by overtaking every job of the machine's queue
    /// ahead of it (at the indexes `ahead`).
    fn overtake(&mut self, at: usize, ahead: &[usize]) -> Decision {
        let entry = self.entries.remove(at);
        self.charge(&entry);
        let holds = entry.request.unwrap_or_default();
        let mut overtook = HashSet::with_capacity(ahead.len());
        for &index in ahead {
            let overtaken = &mut self.entries[index];
            overtaken.overtaken_by = overtaken.overtaken_by.plus(&holds);
            overtook.insert(overtaken.seq);
        }
        self.overtakers
            .insert(entry.uid, Overtaker { holds, overtook });
        Decision::Take(Admitted {
            waited: Some(entry.since.elapsed()),
            backfilled: true,
        })
    }

    /// Wakes the jobs behind the head of the machine's queue (which does not fit `free`) that
    /// may start now.
    fn wake_starters(&mut self, free: &Amounts) {
        let machine = self.machine();
        let queue: Vec<Queued> = machine
            .iter()
            .map(|&index| self.entries[index].as_queued())
            .collect();
        for place in backfill::starters(&self.capacity, free, &queue) {
            let entry = &mut self.entries[machine[place]];
            entry.may_try = true;
            entry.turn.notify_one();
        }
    }

    /// Wakes the job at the head of the machine's queue, if any (a wake-up it is not waiting
    /// for yet is kept for it).
    fn wake_head(&self) {
        if let Some(head) = self.entries.iter().find(|entry| entry.quota_hold.is_none()) {
            head.turn.notify_one();
        }
    }
}

/// `1st`, `2nd`, `3rd`, `4th`, ... `11th`, `21st`.
fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

#[cfg(test)]
mod tests;
