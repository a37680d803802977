//! `examples/mxjob-dist.yaml` with real MXNet (1.9.1, Python 3.9): a Scheduler, a Server and two
//! Workers meet through the environment the MXJob gives them (ps-lite on loopback, kvstore
//! `dist_sync`), the workers' loss falls by orders of magnitude and both learn the true weights.

use super::*;

/// The MXNet example's virtualenv (`scripts/python-env mxnet`: Python 3.9, mxnet 1.9.1).
const MXNET_VENV: Venv = Venv {
    variable: "TRAINCTL_MXNET_PATH",
    script: "scripts/python-env mxnet",
};

/// The slots of the job, each with the role its `DMLC_ROLE` and `MX_CONFIG` task give it.
const SLOTS: [(&str, &str); 4] = [
    ("scheduler-0", "scheduler"),
    ("server-0", "server"),
    ("worker-0", "worker"),
    ("worker-1", "worker"),
];

#[test]
#[ignore = "needs MXNet (Python 3.9, scripts/python-env mxnet): run through ./scripts/test"]
fn mxnet_example_learns_through_its_parameter_server() {
    let sandbox = Sandbox::in_venv("mxnet", &MXNET_VENV);
    let run = sandbox.run("examples/mxjob-dist.yaml").finish();

    assert_eq!(run.code, Some(0), "the MXNet job succeeds:\n{run}");
    assert_eq!(
        conditions(&run.json()),
        ran_then(
            "MXJob",
            "MXJob linear-mxnet is created.",
            "MXJob linear-mxnet is running.",
            ("Succeeded", "MXJob linear-mxnet is successfully completed."),
        )
    );
    // The Scheduler decides: it ends once every node has finalized, and the job with it; a
    // server or worker still shutting MXNet down then is stopped.
    let rows = summary(&run.stderr);
    assert_eq!(
        (
            rows["scheduler-0"].state.as_str(),
            rows["scheduler-0"].exit.as_str()
        ),
        ("Succeeded", "0"),
        "{run}"
    );
    for (slot, role) in SLOTS {
        let state = (rows[slot].state.as_str(), rows[slot].exit.as_str());
        assert!(
            matches!(state, ("Succeeded", "0") | ("Stopped", "143")),
            "{slot}: {state:?}\n{run}"
        );
        // Each replica found its role in the env, and its address in MX_CONFIG.
        let config = replica_lines(&run.stderr, slot)
            .find_map(|text| text.strip_prefix(&format!("{role}: MX_CONFIG=")))
            .unwrap_or_else(|| panic!("{slot} printed its MX_CONFIG:\n{run}"));
        let config: serde_json::Value = serde_json::from_str(config).expect("MX_CONFIG is JSON");
        let index = slot.rsplit('-').next().expect("an index");
        assert_eq!(
            config["task"],
            serde_json::json!({"type": role, "index": index.parse::<u32>().expect("a number")}),
            "{slot}"
        );
        assert_eq!(
            config["cluster"][role][index.parse::<usize>().expect("a number")],
            serde_json::json!({"url": "127.0.0.1", "port": rows[slot].port.expect("a port")}),
            "{slot}"
        );
    }

    let loss = |text: &str| -> f64 { text.trim().parse().expect("a loss") };
    for (worker, id) in [("worker-0", "0"), ("worker-1", "1")] {
        let log = sandbox.logs("linear-mxnet", worker);
        assert!(
            log.contains(&format!(" of 2 (DMLC_WORKER_ID={id})\n")),
            "{log}"
        );
        assert!(
            log.lines().any(|line| line.starts_with("epoch 5/5 loss=")),
            "{worker} trained all 5 epochs:\n{log}"
        );
        let (initial, last) = log
            .lines()
            .find_map(|line| line.strip_prefix("loss: ")?.split_once(" -> "))
            .unwrap_or_else(|| panic!("{worker} ends with `loss: A -> B`:\n{log}"));
        assert!(
            loss(initial) > 1.0 && loss(last) < loss(initial) / 1000.0,
            "{worker}: the loss falls by three orders of magnitude: {initial} -> {last}"
        );
        let weights = log
            .lines()
            .find_map(|line| line.strip_prefix("weights=["))
            .and_then(|rest| rest.split_once("] bias="))
            .unwrap_or_else(|| panic!("{worker} printed its weights:\n{log}"));
        let learned: Vec<f64> = weights
            .0
            .split(", ")
            .chain(weights.1.split_whitespace().take(1))
            .map(|value| value.parse().expect("a number"))
            .collect();
        for (learned, truth) in learned.iter().zip([2.0, -3.4, 4.2]) {
            assert!(
                (learned - truth).abs() < 0.01,
                "{worker} learned {learned}, the truth is {truth}:\n{log}"
            );
        }
    }
    sandbox.assert_no_process_left();
}
