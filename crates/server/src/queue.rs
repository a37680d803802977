//! The admission queue: which waiting job may take its resources next.
//!
//! The policy, as `docs/server.md` states it: jobs wait in order of priority (higher first), then
//! of submission (first come, first served). Only the job at the head of the queue tries to take
//! its resources; the jobs behind it wait even when they would fit, so a large job at the head
//! is never overtaken forever by a stream of small ones (no starvation within a priority). A job
//! leaves the queue when it is admitted, suspended, deleted or fails.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::watch;

/// One waiting job.
#[derive(Debug, Clone)]
struct Entry {
    uid: String,
    priority: i32,
    /// Submission order.
    seq: u64,
    /// When it was queued.
    since: Instant,
}

/// The queue, shared by the server and every waiting run.
#[derive(Debug)]
pub struct Queue {
    entries: Mutex<Vec<Entry>>,
    changes: watch::Sender<u64>,
}

impl Default for Queue {
    fn default() -> Self {
        Queue {
            entries: Mutex::new(Vec::new()),
            changes: watch::Sender::new(0),
        }
    }
}

impl Queue {
    /// Queues the job `uid` behind every job of its priority or higher already queued.
    pub fn push(&self, uid: &str, priority: i32, seq: u64) {
        let mut entries = self.lock();
        if entries.iter().any(|entry| entry.uid == uid) {
            return;
        }
        let at = entries
            .iter()
            .position(|entry| {
                (priority, std::cmp::Reverse(seq)) > (entry.priority, std::cmp::Reverse(entry.seq))
            })
            .unwrap_or(entries.len());
        entries.insert(
            at,
            Entry {
                uid: uid.to_owned(),
                priority,
                seq,
                since: Instant::now(),
            },
        );
        drop(entries);
        self.moved();
    }

    /// How many jobs wait.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no job waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Tells the waiting jobs that resources were given back: the head tries again.
    pub fn moved(&self) {
        self.changes.send_modify(|version| *version += 1);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Entry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Queue {
    /// How many jobs are ahead of the job `uid`; `None` when it is not queued.
    pub fn position(&self, uid: &str) -> Option<u32> {
        let entries = self.lock();
        entries
            .iter()
            .position(|entry| entry.uid == uid)
            .map(|at| u32::try_from(at).unwrap_or(u32::MAX))
    }

    /// The job `uid` leaves the queue (admitted, suspended, deleted or ended); how long it
    /// waited, or `None` when it was not queued.
    pub fn leave(&self, uid: &str) -> Option<Duration> {
        let mut entries = self.lock();
        let at = entries.iter().position(|entry| entry.uid == uid)?;
        let entry = entries.remove(at);
        drop(entries);
        self.moved();
        Some(entry.since.elapsed())
    }

    /// Changes whenever the queue moves or resources are given back.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_come_first_served_within_a_priority() {
        let queue = Queue::default();
        queue.push("a", 0, 1);
        queue.push("b", 0, 2);
        queue.push("c", 0, 3);
        assert_eq!(
            ["a", "b", "c"].map(|uid| queue.position(uid)),
            [Some(0), Some(1), Some(2)]
        );
    }

    #[test]
    fn higher_priority_goes_first_then_submission_order() {
        let queue = Queue::default();
        queue.push("low", 0, 1);
        queue.push("high-late", 100, 3);
        queue.push("high-early", 100, 2);
        queue.push("mid", 50, 4);
        assert_eq!(
            ["high-early", "high-late", "mid", "low"].map(|uid| queue.position(uid)),
            [Some(0), Some(1), Some(2), Some(3)]
        );
    }

    #[test]
    fn leaving_moves_the_rest_up_and_announces_it() {
        let queue = Queue::default();
        queue.push("a", 0, 1);
        queue.push("b", 0, 2);
        let mut changes = queue.changes();
        changes.mark_unchanged();
        assert!(queue.leave("a").is_some());
        assert!(queue.leave("a").is_none());
        assert!(changes.has_changed().expect("sender alive"));
        assert_eq!(queue.position("b"), Some(0));
        assert_eq!(queue.len(), 1);
    }

    #[test]
    fn a_job_not_queued_has_nobody_ahead_and_pushing_twice_queues_once() {
        let queue = Queue::default();
        assert_eq!(queue.position("nobody"), None);
        queue.push("a", 0, 1);
        queue.push("a", 0, 1);
        assert_eq!(queue.len(), 1);
    }
}
