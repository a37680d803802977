//! The admission queue: which waiting job may take its resources next.
//!
//! The policy, as `docs/server.md` states it: jobs wait in order of priority (higher first), then
//! of submission (first come, first served). Only the job at the head of the queue tries to take
//! its resources; the jobs behind it wait even when they would fit, so a large job at the head
//! is never overtaken forever by a stream of small ones (no starvation within a priority). A job
//! leaves the queue when it is admitted, suspended, deleted or fails.
//!
//! Only the head is woken, when it becomes the head or when resources are given back: the jobs
//! behind it sleep, so a queue of a thousand jobs costs nothing per admission but the next one.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// One waiting job.
#[derive(Debug, Clone)]
struct Entry {
    uid: String,
    priority: i32,
    /// Submission order.
    seq: u64,
    /// When it was queued.
    since: Instant,
    /// Woken when it may be its turn.
    turn: Arc<Notify>,
}

/// The queue, shared by the server and every waiting run.
#[derive(Debug, Default)]
pub struct Queue {
    entries: Mutex<Vec<Entry>>,
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
                turn: Arc::new(Notify::new()),
            },
        );
        if at == 0 {
            wake_head(&entries);
        }
    }

    /// How many jobs wait.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no job waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Tells the head that resources were given back: it tries again.
    pub fn moved(&self) {
        wake_head(&self.lock());
    }

    /// What wakes the job `uid` when it may be its turn; `None` when it is not queued.
    pub fn turn(&self, uid: &str) -> Option<Arc<Notify>> {
        self.lock()
            .iter()
            .find(|entry| entry.uid == uid)
            .map(|entry| Arc::clone(&entry.turn))
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
        if at == 0 {
            wake_head(&entries);
        }
        Some(entry.since.elapsed())
    }
}

/// Wakes the job at the head, if any (a wake-up it is not waiting for yet is kept for it).
fn wake_head(entries: &[Entry]) {
    if let Some(head) = entries.first() {
        head.turn.notify_one();
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

    /// Whether `turn` was woken (consuming the wake-up).
    fn woken(turn: &Notify) -> bool {
        use std::future::Future as _;
        let notified = std::pin::pin!(turn.notified());
        let waker = std::task::Waker::noop();
        notified
            .poll(&mut std::task::Context::from_waker(waker))
            .is_ready()
    }

    #[test]
    fn leaving_moves_the_rest_up_and_wakes_only_the_new_head() {
        let queue = Queue::default();
        queue.push("a", 0, 1);
        queue.push("b", 0, 2);
        queue.push("c", 0, 3);
        let [a, b, c] = ["a", "b", "c"].map(|uid| queue.turn(uid).expect("queued"));
        assert!(woken(&a), "the first job is the head at once");
        assert!(queue.leave("a").is_some());
        assert!(queue.leave("a").is_none());
        assert!(woken(&b), "b is the head now");
        assert!(!woken(&c), "c still waits behind b");
        assert_eq!(queue.position("b"), Some(0));
        assert_eq!(queue.len(), 2);
        queue.moved();
        assert!(
            woken(&b) && !woken(&c),
            "resources given back: the head tries again"
        );
        assert!(queue.turn("a").is_none());
    }

    #[test]
    fn a_job_of_higher_priority_that_takes_the_head_is_woken() {
        let queue = Queue::default();
        queue.push("low", 0, 1);
        let low = queue.turn("low").expect("queued");
        assert!(woken(&low));
        queue.push("high", 10, 2);
        assert!(woken(&queue.turn("high").expect("queued")));
        assert!(!woken(&low));
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
