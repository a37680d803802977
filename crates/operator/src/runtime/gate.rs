//! The gate of a kind's reconciles (`--controller-threads`): at most that many run at once, and
//! a job's *follow-up* goes before a job's *first* reconcile.
//!
//! A first reconcile (a new job, or a new spec: a suspend, a resume, a scale) creates or deletes
//! children, which takes one request per object; a follow-up (the job's pods changed) mostly
//! reads the caches and writes the job's status. When 100 jobs are created at once, their 100
//! first reconciles queue at the gate; in a first-come queue, a job whose pods were all running
//! waited there behind the creations of every job created after it, and turned `Running` up to
//! 6 s late (BENCHMARKS.md). Here a follow-up takes the next free place. Follow-ups are paced
//! to one a second per job (`pacing.rs`) and are short, so first reconciles are not starved.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::oneshot;

/// At most `places` reconciles at once, follow-ups first.
#[derive(Debug)]
pub struct Gate {
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    /// Places free now.
    free: usize,
    /// The follow-ups waiting, first come first.
    follow_ups: VecDeque<oneshot::Sender<Place>>,
    /// The first reconciles waiting, first come first.
    firsts: VecDeque<oneshot::Sender<Place>>,
}

/// Which queue a reconcile waits in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// A job's reconcile after one at the same generation: it goes first.
    FollowUp,
    /// A job's first reconcile at its generation.
    First,
}

/// A place at the gate, given back when dropped (to the next waiter, follow-ups first).
#[derive(Debug)]
pub struct Place {
    gate: Option<Arc<Gate>>,
}

impl Gate {
    /// A gate of `places` places (at least one).
    #[must_use]
    pub fn new(places: usize) -> Arc<Gate> {
        Arc::new(Gate {
            state: Mutex::new(State {
                free: places.max(1),
                follow_ups: VecDeque::new(),
                firsts: VecDeque::new(),
            }),
        })
    }

    /// Waits for a place, in `turn`'s queue. Cancel-safe: a place given to a waiter that is
    /// gone passes on to the next.
    pub async fn enter(self: &Arc<Self>, turn: Turn) -> Place {
        let waiting = {
            let mut state = self.lock();
            if state.free > 0 {
                state.free -= 1;
                return Place {
                    gate: Some(Arc::clone(self)),
                };
            }
            let (sender, receiver) = oneshot::channel();
            match turn {
                Turn::FollowUp => state.follow_ups.push_back(sender),
                Turn::First => state.firsts.push_back(sender),
            }
            receiver
        };
        // The sender lives in the queue until a place is given: it is never dropped unsent
        // while the gate lives, and the caller holds the gate.
        waiting
            .await
            .expect("a waiter's place is given, not dropped")
    }

    /// Gives a place back: to the first waiter still there, follow-ups first, else free.
    fn give_back(self: Arc<Self>) {
        let mut state = self.lock();
        let mut place = Place {
            gate: Some(Arc::clone(&self)),
        };
        while let Some(waiter) = state
            .follow_ups
            .pop_front()
            .or_else(|| state.firsts.pop_front())
        {
            match waiter.send(place) {
                Ok(()) => return,
                // Gone (cancelled): the next one.
                Err(returned) => place = returned,
            }
        }
        // Nobody waits: the place is free again, without being given back a second time.
        place.gate = None;
        state.free += 1;
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Counts and queues only, each change complete before it unlocks.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        if let Some(gate) = self.gate.take() {
            gate.give_back();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// Whether `future` is done after the runtime had a moment to run it.
    async fn entered(handle: &tokio::task::JoinHandle<Place>) -> bool {
        tokio::time::sleep(Duration::from_millis(20)).await;
        handle.is_finished()
    }

    #[tokio::test]
    async fn a_follow_up_enters_before_first_reconciles_that_came_earlier() {
        let gate = Gate::new(1);
        let held = gate.enter(Turn::First).await;
        let first = tokio::spawn({
            let gate = Arc::clone(&gate);
            async move { gate.enter(Turn::First).await }
        });
        assert!(!entered(&first).await);
        let follow_up = tokio::spawn({
            let gate = Arc::clone(&gate);
            async move { gate.enter(Turn::FollowUp).await }
        });
        assert!(!entered(&follow_up).await);
        drop(held);
        assert!(entered(&follow_up).await);
        assert!(
            !first.is_finished(),
            "the first waits for the follow-up's place"
        );
        drop(follow_up.await.expect("entered"));
        assert!(entered(&first).await);
    }

    #[tokio::test]
    async fn a_place_given_to_a_cancelled_waiter_passes_on_and_none_is_lost() {
        let gate = Gate::new(2);
        let (a, b) = (gate.enter(Turn::First).await, gate.enter(Turn::First).await);
        let cancelled = tokio::spawn({
            let gate = Arc::clone(&gate);
            async move { gate.enter(Turn::FollowUp).await }
        });
        let waiting = tokio::spawn({
            let gate = Arc::clone(&gate);
            async move { gate.enter(Turn::First).await }
        });
        assert!(!entered(&cancelled).await);
        cancelled.abort();
        let _ = cancelled.await;
        drop(a);
        assert!(
            entered(&waiting).await,
            "the place skipped the cancelled waiter"
        );
        drop((b, waiting.await.expect("entered")));
        // Both places are free again.
        let (_c, _d) = (gate.enter(Turn::First).await, gate.enter(Turn::First).await);
        assert_eq!(gate.lock().free, 0);
    }
}
