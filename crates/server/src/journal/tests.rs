use super::*;

fn event(reason: &str, message: &str) -> EventRecord {
    EventRecord::once(
        Timestamp::UNIX_EPOCH,
        "Normal",
        reason,
        message.to_owned(),
        None,
    )
}

/// `event` as a series of `count`.
fn times(count: u32, event: EventRecord) -> EventRecord {
    EventRecord { count, ..event }
}

fn exited(code: i32) -> EventRecord {
    event(
        "ExitedWithCode",
        &format!("Pod: default.mnist-worker-0 exited with code {code}"),
    )
}

fn back_off(pod: &str) -> EventRecord {
    EventRecord {
        type_: "Warning".to_owned(),
        object: Some(pod.to_owned()),
        ..event(
            "BackOff",
            &format!("Back-off restarting failed container of pod {pod}"),
        )
    }
}

fn restart(replica: &str, exit_code: Option<i32>, restarts: i32) -> Restart {
    Restart {
        replica: replica.to_owned(),
        exit_code,
        restarts,
    }
}

fn restarts() -> Restarts {
    Restarts::new(
        "tfjob/default/mnist".to_owned(),
        "mnist".to_owned(),
        Timestamp::UNIX_EPOCH,
        HashMap::new(),
    )
}

#[test]
fn an_exit_then_a_back_off_is_a_restart_in_place() {
    let mut restarts = restarts();
    let created = event("SuccessfulCreatePod", "Created pod: mnist-worker-0");
    let events = [created.clone(), exited(3), back_off("mnist-worker-0")];
    assert_eq!(restarts.read(&events), [restart("worker-0", Some(3), 1)]);
    assert_eq!(restarts.read(&events), [], "read once");
    // The events as the store gives them after an exit with another code, then one with the
    // first code again: each series once, counted, in the order they last happened.
    let events = [
        created.clone(),
        exited(3),
        exited(137),
        times(2, back_off("mnist-worker-0")),
    ];
    assert_eq!(restarts.read(&events), [restart("worker-0", Some(137), 2)]);
    let events = [
        created,
        exited(137),
        times(2, exited(3)),
        times(3, back_off("mnist-worker-0")),
    ];
    assert_eq!(restarts.read(&events), [restart("worker-0", Some(3), 3)]);
    // Two restarts between two reads are two.
    let events = [
        exited(137),
        times(4, exited(3)),
        times(5, back_off("mnist-worker-0")),
    ];
    assert_eq!(
        restarts.read(&events),
        [
            restart("worker-0", Some(3), 4),
            restart("worker-0", Some(3), 5)
        ]
    );
}

#[test]
fn combined_back_offs_are_restarts_of_the_latest_pod_they_name() {
    let mut restarts = restarts();
    let combined = |pod: &str, count| {
        let back_off = back_off(pod);
        EventRecord {
            count,
            message: format!("{COMBINED}{}", back_off.message),
            object: None,
            ..back_off
        }
    };
    assert_eq!(
        restarts.read(&[combined("mnist-worker-11", 1)]),
        [restart("worker-11", None, 1)]
    );
    assert_eq!(
        restarts.read(&[combined("mnist-worker-12", 3)]),
        [restart("worker-12", None, 1), restart("worker-12", None, 2)]
    );
}

#[test]
fn exits_then_the_engines_restarting_are_restarts_of_the_pods_that_failed() {
    let mut restarts = restarts();
    let events = [
        event(
            "ExitedWithCode",
            "Pod: default.mnist-worker-0 exited with code 0",
        ),
        event(
            "ExitedWithCode",
            "Pod: default.mnist-worker-1 exited with code 130",
        ),
        event(
            "TFJobRestarting",
            "TFJob mnist is restarting because 1 Worker replica(s) failed.",
        ),
    ];
    assert_eq!(restarts.read(&events), [restart("worker-1", Some(130), 1)]);
}

#[test]
fn a_final_exit_is_no_restart_and_earlier_runs_do_not_count() {
    let mut restarts = restarts();
    restarts.since = Timestamp::from_second(10).expect("time");
    let at = |second| Timestamp::from_second(second).expect("time");
    let old = EventRecord {
        time: at(5),
        first_time: at(1),
        ..times(2, back_off("mnist-worker-0"))
    };
    let last = EventRecord {
        time: at(11),
        first_time: at(11),
        ..exited(0)
    };
    assert_eq!(restarts.read(&[old, last.clone()]), []);
    // A series that began before and went on after: its last occurrence is new.
    let mut restarts = self::restarts();
    restarts.since = at(10);
    let exits = EventRecord {
        time: at(11),
        first_time: at(1),
        ..times(3, exited(2))
    };
    let back_offs = EventRecord {
        time: at(11),
        first_time: at(1),
        ..times(3, back_off("mnist-worker-0"))
    };
    assert_eq!(
        restarts.read(&[exits, back_offs]),
        [restart("worker-0", Some(2), 1)]
    );
}

#[test]
fn a_job_taken_over_counts_on_from_the_restarts_on_record() {
    let mut restarts = Restarts::new(
        "tfjob/default/mnist".to_owned(),
        "mnist".to_owned(),
        Timestamp::UNIX_EPOCH,
        HashMap::from([("mnist-worker-0".to_owned(), 2)]),
    );
    assert_eq!(
        restarts.read(&[back_off("mnist-worker-0")]),
        [restart("worker-0", None, 3)]
    );
}

#[test]
fn durations_in_words() {
    assert_eq!(seconds(Duration::from_millis(300)), "0.3s");
    assert_eq!(seconds(Duration::from_secs(125)), "2m5s");
}
