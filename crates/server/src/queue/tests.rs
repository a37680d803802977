use super::*;

/// 8 CPUs and 2 GPUs.
fn queue() -> Queue {
    Queue::new(amounts(8, 2))
}

/// `cpus` whole CPUs, no memory, `gpus` GPUs.
fn amounts(cpus: u64, gpus: u64) -> Amounts {
    Amounts {
        cpu_millis: cpus * 1_000,
        memory_bytes: 0,
        gpus,
    }
}

/// Whether `turn` was woken (consuming the wake-up).
pub(super) fn woken(turn: &Notify) -> bool {
    use std::future::Future as _;
    let notified = std::pin::pin!(turn.notified());
    let waker = std::task::Waker::noop();
    notified
        .poll(&mut std::task::Context::from_waker(waker))
        .is_ready()
}

/// Queues a job of namespace `default`, which has no quota.
fn push(queue: &Queue, uid: &str, label: &str, priority: i32, seq: u64) -> usize {
    queue.push(Waiting {
        uid,
        label,
        priority,
        seq,
        namespace: "default",
        charge: Usage::default(),
    })
}

fn took(decision: &Decision) -> Option<bool> {
    match decision {
        Decision::Take(admitted) => Some(admitted.backfilled),
        _ => None,
    }
}

#[test]
fn first_come_first_served_within_a_priority() {
    let queue = queue();
    assert_eq!(push(&queue, "a", "tfjob/default/a", 0, 1), 0);
    assert_eq!(push(&queue, "b", "tfjob/default/b", 0, 2), 1);
    assert_eq!(push(&queue, "c", "tfjob/default/c", 0, 3), 2);
    assert_eq!(
        ["a", "b", "c"].map(|uid| queue.position(uid)),
        [Some(0), Some(1), Some(2)]
    );
}

#[test]
fn higher_priority_goes_first_then_submission_order() {
    let queue = queue();
    push(&queue, "low", "low", 0, 1);
    push(&queue, "high-late", "high-late", 100, 3);
    push(&queue, "high-early", "high-early", 100, 2);
    push(&queue, "mid", "mid", 50, 4);
    assert_eq!(
        ["high-early", "high-late", "mid", "low"].map(|uid| queue.position(uid)),
        [Some(0), Some(1), Some(2), Some(3)]
    );
}

#[test]
fn the_head_that_fits_takes_and_only_the_new_head_is_woken() {
    let queue = queue();
    push(&queue, "a", "a", 0, 1);
    push(&queue, "b", "b", 0, 2);
    push(&queue, "c", "c", 0, 3);
    let [a, b, c] = ["a", "b", "c"].map(|uid| queue.turn(uid).expect("queued"));
    assert!(woken(&a), "the first job is the head at once");
    let decision = queue.decide("a", &amounts(8, 2), &amounts(8, 2), true);
    assert_eq!(took(&decision), Some(false));
    assert!(woken(&b), "b is the head now");
    assert!(!woken(&c), "c still waits behind b");
    assert_eq!(queue.position("b"), Some(0));
    assert_eq!(queue.len(), 2);
    queue.ended("a");
    assert!(
        woken(&b) && !woken(&c),
        "a's run ended, its resources given back: the head tries again"
    );
    assert!(queue.turn("a").is_none());
}

#[test]
fn a_job_of_higher_priority_that_takes_the_head_is_woken() {
    let queue = queue();
    push(&queue, "low", "low", 0, 1);
    let low = queue.turn("low").expect("queued");
    assert!(woken(&low));
    push(&queue, "high", "high", 10, 2);
    assert!(woken(&queue.turn("high").expect("queued")));
    assert!(!woken(&low));
}

#[test]
fn a_job_not_queued_takes_and_pushing_twice_queues_once() {
    let queue = queue();
    assert_eq!(queue.position("nobody"), None);
    assert!(queue.may_try("nobody"));
    assert_eq!(
        queue.decide("nobody", &amounts(1, 0), &amounts(8, 2), true),
        Decision::Take(Admitted {
            waited: None,
            backfilled: false
        })
    );
    assert_eq!(
        queue.decide("nobody", &amounts(9, 0), &amounts(8, 2), false),
        Decision::Short
    );
    push(&queue, "a", "a", 0, 1);
    push(&queue, "a", "a", 0, 1);
    assert_eq!(queue.len(), 1);
}

/// A 2-GPU machine with one GPU held; the head `h` wants both; `j` wants one GPU, `c` a CPU.
fn head_waiting_for_gpus() -> Queue {
    let queue = queue();
    push(&queue, "h", "tfjob/default/h", 0, 1);
    push(&queue, "j", "tfjob/default/j", 0, 2);
    push(&queue, "c", "tfjob/default/c", 0, 3);
    assert_eq!(
        queue.decide("h", &amounts(1, 2), &amounts(7, 1), false),
        Decision::Short
    );
    queue
}

#[test]
fn a_job_that_would_delay_the_head_waits_and_says_so() {
    let queue = head_waiting_for_gpus();
    assert!(queue.may_try("j"), "its first try");
    assert_eq!(
        queue.decide("j", &amounts(1, 1), &amounts(7, 1), true),
        Decision::Behind
    );
    assert!(
        !queue.may_try("j"),
        "it sleeps until the head finds it may start"
    );
    assert_eq!(
        queue.why_behind("j").as_deref(),
        Some("queued behind 1 job; would delay tfjob/default/h at the head of the queue")
    );
    assert_eq!(
        queue.why_behind("h"),
        None,
        "the head says what it lacks itself"
    );
}

#[test]
fn a_job_that_fits_in_what_the_head_cannot_use_starts_by_backfill() {
    let queue = head_waiting_for_gpus();
    queue.decide("j", &amounts(1, 1), &amounts(7, 1), true);
    assert_eq!(
        took(&queue.decide("c", &amounts(2, 0), &amounts(7, 1), true)),
        Some(true)
    );
    assert_eq!(queue.position("c"), None, "it left the queue");
    assert_eq!(queue.position("h"), Some(0), "the head is still the head");
}

#[test]
fn a_job_too_large_for_what_is_free_says_what_it_wants() {
    let queue = head_waiting_for_gpus();
    assert_eq!(
        queue.decide("c", &amounts(3, 0), &amounts(2, 1), false),
        Decision::Behind
    );
    assert_eq!(
        queue.why_behind("c").as_deref(),
        Some("queued behind 2 jobs; too large to start before them: wants 3 CPUs, 2 CPUs free")
    );
}

#[test]
fn the_head_that_does_not_fit_wakes_only_the_jobs_that_may_start() {
    let queue = head_waiting_for_gpus();
    let [j, c] = ["j", "c"].map(|uid| queue.turn(uid).expect("queued"));
    queue.decide("j", &amounts(1, 1), &amounts(7, 1), true);
    queue.decide("c", &amounts(8, 0), &amounts(7, 1), false);
    while woken(&j) || woken(&c) {}
    // Another job ended: 8 CPUs free now, still 1 GPU.
    assert_eq!(
        queue.decide("h", &amounts(1, 2), &amounts(8, 1), false),
        Decision::Short
    );
    assert!(!woken(&j), "j would still take the GPU the head waits for");
    assert!(!woken(&c), "c's 8 CPUs do not fit in the 7 the head leaves");
    assert!(!queue.may_try("j") && !queue.may_try("c"));
}

#[test]
fn the_head_wakes_a_job_behind_it_that_may_start_now() {
    let queue = queue();
    push(&queue, "h", "h", 0, 1);
    push(&queue, "c", "c", 0, 2);
    let c = queue.turn("c").expect("queued");
    // c's first try: 8 CPUs held by others, nothing free for it.
    assert_eq!(
        queue.decide("c", &amounts(2, 0), &amounts(0, 1), false),
        Decision::Behind
    );
    assert!(!queue.may_try("c"));
    assert!(!woken(&c));
    // CPUs were given back: the head (waiting for GPUs) tries, and finds that c may start.
    queue.decide("h", &amounts(0, 2), &amounts(8, 1), false);
    assert!(woken(&c));
    assert!(queue.may_try("c"));
    assert_eq!(
        took(&queue.decide("c", &amounts(2, 0), &amounts(8, 1), true)),
        Some(true)
    );
}

#[test]
fn a_backfilled_job_counts_against_the_jobs_it_overtook_until_it_ends() {
    // h waits for GPUs; q (second) wants 6 CPUs, 5 are free; b (third) takes 1 CPU by backfill.
    let queue = queue();
    push(&queue, "h", "tfjob/default/h", 0, 1);
    push(&queue, "q", "tfjob/default/q", 0, 2);
    push(&queue, "b", "tfjob/default/b", 0, 3);
    push(&queue, "d", "tfjob/default/d", 0, 4);
    queue.decide("h", &amounts(0, 2), &amounts(8, 1), false);
    queue.decide("q", &amounts(6, 0), &amounts(5, 1), false);
    assert_eq!(
        took(&queue.decide("b", &amounts(1, 0), &amounts(5, 1), true)),
        Some(true)
    );
    // d's 2 CPUs would leave q less than its 6 CPUs once everything else ends: 8 - 1 - 2 < 6.
    assert_eq!(
        queue.decide("d", &amounts(2, 0), &amounts(4, 1), true),
        Decision::Behind
    );
    assert_eq!(
        queue.why_behind("d").as_deref(),
        Some("queued behind 2 jobs; would delay tfjob/default/q, 2nd in the queue")
    );
    // The head is admitted: q is the head now, and b still counts against it.
    assert_eq!(
        took(&queue.decide("h", &amounts(0, 2), &amounts(4, 2), true)),
        Some(false)
    );
    let overtaken = |queue: &Queue| queue.lock().entries[0].overtaken_by;
    assert_eq!(overtaken(&queue), amounts(1, 0));
    queue.ended("b");
    assert_eq!(overtaken(&queue), amounts(0, 0));
    // q at the head is short of CPUs: d may take none.
    assert_eq!(
        queue.decide("d", &amounts(2, 0), &amounts(5, 0), true),
        Decision::Behind
    );
    assert_eq!(
        queue.why_behind("d").as_deref(),
        Some("queued behind 1 job; would delay tfjob/default/q at the head of the queue")
    );
}

#[test]
fn a_job_overtaken_is_reserved_for_again_once_the_overtaker_ends() {
    let queue = queue();
    push(&queue, "h", "h", 0, 1);
    push(&queue, "q", "q", 0, 2);
    push(&queue, "b", "b", 0, 3);
    push(&queue, "d", "d", 0, 4);
    queue.decide("h", &amounts(0, 2), &amounts(8, 1), false);
    queue.decide("q", &amounts(6, 0), &amounts(5, 1), false);
    queue.decide("b", &amounts(1, 0), &amounts(5, 1), true);
    assert_eq!(
        queue.decide("d", &amounts(2, 0), &amounts(4, 1), true),
        Decision::Behind
    );
    queue.ended("b");
    assert_eq!(
        took(&queue.decide("d", &amounts(2, 0), &amounts(5, 1), true)),
        Some(true),
        "8 - 2 leaves q its 6 CPUs"
    );
}

#[test]
fn a_job_that_leaves_frees_its_place_and_the_head_tries_again() {
    let queue = head_waiting_for_gpus();
    let h = queue.turn("h").expect("queued");
    while woken(&h) {}
    queue.ended("j");
    assert!(woken(&h));
    assert_eq!(queue.position("c"), Some(1));
    assert_eq!(queue.len(), 2);
}

#[test]
fn ordinals() {
    assert_eq!(
        [1, 2, 3, 4, 11, 12, 13, 21, 22, 101, 111].map(ordinal),
        [
            "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st", "111th"
        ]
    );
}
