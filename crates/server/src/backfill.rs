//! The backfill rule: when a job behind the head of the admission queue may start before the
//! jobs ahead of it. Pure functions of amounts ([`Amounts`]: CPU, memory, GPUs, whatever
//! admission counts), so that the rule is tested without a server.
//!
//! There are no runtime estimates, so the rule reserves instead. A job `C` behind the head `H`
//! may start now only if
//!
//! 1. it fits in what `H` cannot use now: in every resource, what is free less `H`'s request
//!    (never below zero); so `C` takes nothing `H` is short of, and leaves `H` all it needs of
//!    the rest: a job that starts while `H` is the head never delays `H`;
//! 2. every job `Q` it overtakes (each job ahead of it, `H` included) keeps its whole request
//!    reserved: in every resource, the machine's capacity less what the running jobs that
//!    overtook `Q` hold, `C` included, still leaves `Q`'s request. So once the jobs that would
//!    have run before `Q` anyway have finished, `Q` fits: overtaking never makes a job wait
//!    for a job queued behind it.
//!
//! A job ahead whose request is not known yet (it has not tried once) cannot be reserved for:
//! nothing overtakes it until it has.

use trainctl_local::kubelet::admission::Amounts;

/// A job of the queue as the rule sees it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Queued {
    /// What it asks for; `None` until it has tried once.
    pub request: Option<Amounts>,
    /// What the running jobs that overtook it hold together.
    pub overtaken_by: Amounts,
}

impl Queued {
    /// What may still overtake this job, resource by resource: the machine's capacity less its
    /// request and what overtook it already; `None` when its request is not known.
    fn slack(&self, capacity: &Amounts) -> Option<Amounts> {
        self.request
            .map(|request| capacity.minus(&request).minus(&self.overtaken_by))
    }
}

/// Why a job behind the head may not start now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Blocked {
    /// It does not fit in what is free now: `(resource, wanted, free)` for each resource short.
    NotFree(Vec<(trainctl_engine::reconcile::Resource, u64, u64)>),
    /// Starting now would delay the job this many places ahead of it in the queue order (0: the
    /// head).
    WouldDelay(usize),
    /// The job at this place has not tried yet, so nothing may overtake it.
    NotTried(usize),
}

/// Whether `candidate`, behind every job of `ahead` (`ahead[0]` is the head), may start now on
/// a machine of `capacity` with `free` free.
pub fn may_start(
    capacity: &Amounts,
    free: &Amounts,
    ahead: &[Queued],
    candidate: &Amounts,
) -> Result<(), Blocked> {
    let short = candidate.short_of(free);
    if !short.is_empty() {
        return Err(Blocked::NotFree(short));
    }
    let Some(head) = ahead.first() else {
        return Ok(());
    };
    let Some(head_request) = head.request else {
        return Err(Blocked::NotTried(0));
    };
    if !candidate.fits_in(&free.minus(&head_request)) {
        return Err(Blocked::WouldDelay(0));
    }
    for (place, queued) in ahead.iter().enumerate() {
        match queued.slack(capacity) {
            None => return Err(Blocked::NotTried(place)),
            Some(slack) if !candidate.fits_in(&slack) => return Err(Blocked::WouldDelay(place)),
            Some(_) => {}
        }
    }
    Ok(())
}

/// The places of the jobs behind the head (`queue[0]`, which does not fit now) that may start
/// now, in queue order, each counted as started before the next is considered: the jobs to wake.
/// Each of them passes [`may_start`] once those before it have started.
#[must_use]
pub fn starters(capacity: &Amounts, free: &Amounts, queue: &[Queued]) -> Vec<usize> {
    let Some((head, behind)) = queue.split_first() else {
        return Vec::new();
    };
    let (Some(head_request), Some(head_slack)) = (head.request, head.slack(capacity)) else {
        return Vec::new();
    };
    // What the head leaves over of what is free, and what may still overtake every job passed.
    let mut left = free.minus(&head_request);
    let mut slack = head_slack;
    let mut starting = Vec::new();
    for (place, queued) in behind.iter().enumerate() {
        let (Some(request), Some(own_slack)) = (queued.request, queued.slack(capacity)) else {
            break;
        };
        if request.fits_in(&left) && request.fits_in(&slack) {
            starting.push(place + 1);
            left = left.minus(&request);
            slack = slack.minus(&request);
        } else {
            slack = slack.min(&own_slack);
        }
    }
    starting
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `cpus` whole CPUs, no memory, `gpus` GPUs.
    fn amounts(cpus: u64, gpus: u64) -> Amounts {
        Amounts {
            cpu_millis: cpus * 1_000,
            memory_bytes: 0,
            gpus,
        }
    }

    fn queued(cpus: u64, gpus: u64) -> Queued {
        Queued {
            request: Some(amounts(cpus, gpus)),
            overtaken_by: Amounts::default(),
        }
    }

    /// 8 CPUs and 2 GPUs.
    const MACHINE: Amounts = Amounts {
        cpu_millis: 8_000,
        memory_bytes: 0,
        gpus: 2,
    };

    #[test]
    fn a_cpu_only_job_starts_while_the_head_waits_for_gpus() {
        // X runs with 1 GPU and 1 CPU; the head wants both GPUs.
        let free = amounts(7, 1);
        let head = queued(1, 2);
        assert_eq!(may_start(&MACHINE, &free, &[head], &amounts(2, 0)), Ok(()));
    }

    #[test]
    fn a_job_that_would_take_a_gpu_the_head_waits_for_does_not_start() {
        let free = amounts(7, 1);
        let head = queued(1, 2);
        assert_eq!(
            may_start(&MACHINE, &free, &[head], &amounts(1, 1)),
            Err(Blocked::WouldDelay(0))
        );
    }

    #[test]
    fn a_job_takes_only_what_the_head_leaves_of_what_it_is_not_short_of() {
        // The head waits for GPUs, and needs 6 of the 7 free CPUs: 1 CPU is left over.
        let free = amounts(7, 1);
        let head = queued(6, 2);
        assert_eq!(may_start(&MACHINE, &free, &[head], &amounts(1, 0)), Ok(()));
        assert_eq!(
            may_start(&MACHINE, &free, &[head], &amounts(2, 0)),
            Err(Blocked::WouldDelay(0))
        );
    }

    #[test]
    fn a_job_that_does_not_fit_what_is_free_says_what_it_lacks() {
        let free = amounts(1, 0);
        assert_eq!(
            may_start(&MACHINE, &free, &[queued(0, 2)], &amounts(2, 0)),
            Err(Blocked::NotFree(vec![(
                trainctl_engine::reconcile::Resource::CpuMillis,
                2_000,
                1_000
            )]))
        );
    }

    #[test]
    fn every_job_overtaken_keeps_its_request_reserved() {
        // The second job in the queue wants all 8 CPUs; 2 CPUs of jobs that overtook it run.
        let head = queued(0, 2);
        let second = Queued {
            request: Some(amounts(8, 0)),
            overtaken_by: amounts(2, 0),
        };
        let free = amounts(6, 0);
        assert_eq!(
            may_start(&MACHINE, &free, &[head, second], &amounts(1, 0)),
            Err(Blocked::WouldDelay(1))
        );
        // Nothing overtook it yet: its whole request is still there once everything ends.
        let second = queued(8, 0);
        assert_eq!(
            may_start(&MACHINE, &free, &[head, second], &amounts(1, 0)),
            Err(Blocked::WouldDelay(1)),
            "8 CPUs of 8 are reserved for it: not even 1 CPU may overtake it"
        );
        let second = queued(7, 0);
        assert_eq!(
            may_start(&MACHINE, &free, &[head, second], &amounts(1, 0)),
            Ok(())
        );
    }

    #[test]
    fn nothing_overtakes_a_job_that_has_not_tried() {
        let untried = Queued::default();
        assert_eq!(
            may_start(&MACHINE, &MACHINE, &[untried], &amounts(1, 0)),
            Err(Blocked::NotTried(0))
        );
        assert_eq!(
            may_start(&MACHINE, &MACHINE, &[queued(0, 2), untried], &amounts(1, 0)),
            Err(Blocked::NotTried(1))
        );
        assert_eq!(
            starters(
                &MACHINE,
                &amounts(8, 1),
                &[queued(0, 2), untried, queued(1, 0)]
            ),
            Vec::<usize>::new()
        );
    }

    #[test]
    fn a_job_with_nobody_ahead_needs_only_to_fit() {
        assert_eq!(
            may_start(&MACHINE, &amounts(1, 0), &[], &amounts(1, 0)),
            Ok(())
        );
    }

    #[test]
    fn starters_are_the_jobs_that_fit_in_turn_and_each_passes_the_rule() {
        // The head waits for 2 GPUs (1 free) and needs 2 CPUs of the 6 free: 4 CPUs are left.
        let free = amounts(6, 1);
        let queue = [
            queued(2, 2),
            queued(1, 1), // would take the GPU the head waits for
            queued(3, 0), // fits: 1 CPU left over after it
            queued(2, 0), // does not fit in the 1 CPU left
            queued(1, 0), // fits
            queued(1, 0), // nothing left
        ];
        let starting = starters(&MACHINE, &free, &queue);
        assert_eq!(starting, [2, 4]);
        // Started one after the other, each passes the rule for the queue as it is then.
        let mut free = free;
        let mut remaining: Vec<(usize, Queued)> = queue.into_iter().enumerate().collect();
        for place in starting {
            let at = remaining
                .iter()
                .position(|(original, _)| *original == place)
                .expect("still queued");
            let (_, job) = remaining.remove(at);
            let request = job.request.expect("tried");
            let ahead: Vec<Queued> = remaining[..at].iter().map(|(_, q)| *q).collect();
            assert_eq!(
                may_start(&MACHINE, &free, &ahead, &request),
                Ok(()),
                "{place}"
            );
            free = free.minus(&request);
            for (_, overtaken) in &mut remaining[..at] {
                overtaken.overtaken_by = overtaken.overtaken_by.plus(&request);
            }
        }
    }

    #[test]
    fn a_job_that_passes_over_a_blocked_one_still_reserves_for_it() {
        // The second job wants 7 CPUs, 3 are free: it waits. The third wants 2: taking them
        // would leave the second less than its request once everything else ends (8 - 2 < 7);
        // the fourth's 1 CPU leaves it its 7.
        let free = amounts(3, 1);
        let queue = [queued(0, 2), queued(7, 0), queued(2, 0), queued(1, 0)];
        assert_eq!(starters(&MACHINE, &free, &queue), [3]);
    }
}
