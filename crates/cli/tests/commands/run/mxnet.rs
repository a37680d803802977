//! An MXJob on this machine (docs/semantics.md §4.8, §5.3): every replica's `MX_CONFIG` and
//! `DMLC_*` variables are what `render` shows with loopback addresses and the slots' own ports,
//! plus `DMLC_NODE_HOST`; the Scheduler decides a training job, the Tuner a tuning job.

use super::*;

/// A `jobMode` MXJob named `name` of `replica_specs` (see [`job_of_kind`]).
fn mxjob(name: &str, mode: &str, replica_specs: &[Replicas<'_>]) -> String {
    job_of_kind(
        JobKind::MXJob,
        name,
        &[&format!("jobMode: {mode}")],
        replica_specs,
    )
}

/// The variables MXNet's replicas get, as `env` prints them.
fn mxnet_env(log: &str) -> BTreeMap<String, String> {
    env_lines(log)
        .into_iter()
        .filter(|(name, _)| name == "MX_CONFIG" || name.starts_with("DMLC_"))
        .collect()
}

#[test]
fn mxnet_env_matches_render_with_loopback_ports_and_the_scheduler_decides() {
    let scratch = Scratch::new("mxnet-env");
    let others = "env\necho up >> ready";
    // The scheduler outlives the others: its end ends the job, and stops what still runs.
    let scheduler = "env\nuntil [ \"$(grep -c up ready 2>/dev/null)\" = 3 ]; do sleep 0.01; done";
    let manifest = scratch.write(
        "job.yaml",
        &mxjob(
            "mxe",
            "MXTrain",
            &[
                replicas("Scheduler", 1, "Never", scheduler),
                replicas("Server", 1, "Never", others),
                replicas("Worker", 2, "Never", others),
            ],
        ),
    );
    let run = scratch.run(&manifest, &["-q"]);
    assert_eq!(run.code, Some(0), "{run}");
    let rows = summary(&run.stderr);
    let slots = ["scheduler-0", "server-0", "worker-0", "worker-1"];
    let ports: Vec<u16> = slots
        .iter()
        .map(|slot| rows[*slot].port.expect("a port"))
        .collect();
    for (slot, role) in slots
        .iter()
        .zip(["scheduler", "server", "worker", "worker"])
    {
        let seen = mxnet_env(&replica_log(&scratch, "mxe", slot));
        // Byte for byte the operator's env, with loopback addresses for the services.
        let mut expected = rendered_env(&scratch, &manifest, &format!("mxe-{slot}"));
        let mut config = expected["MX_CONFIG"].clone();
        for (other, port) in slots.iter().zip(&ports) {
            config = config.replace(
                &format!("{{\"url\":\"mxe-{other}\",\"port\":9091}}"),
                &format!("{{\"url\":\"127.0.0.1\",\"port\":{port}}}"),
            );
        }
        expected.insert("MX_CONFIG".to_owned(), config);
        expected.insert("DMLC_PS_ROOT_URI".to_owned(), "127.0.0.1".to_owned());
        expected.insert("DMLC_PS_ROOT_PORT".to_owned(), ports[0].to_string());
        expected.insert("DMLC_NODE_HOST".to_owned(), "127.0.0.1".to_owned());
        assert_eq!(seen, expected, "{slot}");
        assert_eq!(seen["DMLC_ROLE"], role, "{slot}");
    }
    let worker = mxnet_env(&replica_log(&scratch, "mxe", "worker-1"));
    assert_eq!(
        worker["MX_CONFIG"],
        format!(
            r#"{{"cluster":{{"scheduler":[{{"url":"127.0.0.1","port":{}}}],"server":[{{"url":"127.0.0.1","port":{}}}],"worker":[{{"url":"127.0.0.1","port":{}}},{{"url":"127.0.0.1","port":{}}}]}},"labels":{{"scheduler":"","server":"","worker":""}},"task":{{"type":"worker","index":1}}}}"#,
            ports[0], ports[1], ports[2], ports[3]
        )
    );
    assert_eq!(
        [
            worker["DMLC_NUM_SERVER"].as_str(),
            worker["DMLC_NUM_WORKER"].as_str(),
            worker["DMLC_WORKER_ID"].as_str(),
            worker["DMLC_USE_KUBERNETES"].as_str(),
        ],
        ["1", "2", "1", "1"]
    );
    let get = scratch.trainctl(&["get", "mxjob", "mxe", "-o", "json"]);
    assert_eq!(get.code, Some(0), "{get}");
    let conditions = get.json()["status"]["conditions"].clone();
    let last = &conditions[conditions.as_array().expect("conditions").len() - 1];
    assert_eq!(last["type"], "Succeeded");
    assert_eq!(last["message"], "MXJob mxe is successfully completed.");
}

#[test]
fn a_tuning_job_succeeds_when_its_tuner_does_and_its_servers_are_stopped() {
    let scratch = Scratch::new("mxnet-tune");
    // The tracker and the tuner servers serve until stopped, as TVM's do.
    let serve = "echo up >> ready\nexec sleep 600";
    let tuner = "until [ \"$(grep -c up ready 2>/dev/null)\" = 2 ]; do sleep 0.01; done\n\
                 echo \"tuned with $DMLC_ROLE, scheduler '$DMLC_PS_ROOT_URI'\"";
    let manifest = scratch.write(
        "job.yaml",
        &mxjob(
            "tvm",
            "MXTune",
            &[
                replicas("TunerTracker", 1, "Never", serve),
                replicas("TunerServer", 1, "Never", serve),
                replicas("Tuner", 1, "Never", tuner),
            ],
        ),
    );
    let run = scratch.run(&manifest, &["-q"]);
    assert_eq!(run.code, Some(0), "{run}");
    assert_eq!(
        replica_log(&scratch, "tvm", "tuner-0"),
        "tuned with tuner, scheduler ''\n"
    );
    let states: BTreeMap<String, String> = summary(&run.stderr)
        .into_iter()
        .map(|(replica, row)| (replica, row.state))
        .collect();
    assert_eq!(states["tuner-0"], "Succeeded", "{run}");
    for served in ["tunertracker-0", "tunerserver-0"] {
        assert_eq!(states[served], "Stopped", "{served}: {run}");
    }
}
