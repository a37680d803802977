//! `$(VAR)` expansion bounded in total, not only per string: a manifest of 900 KB that defines
//! `V7` as 128,000 bytes in seven doublings, then 20,000 env entries or args of `$(V7)`, would
//! expand to 2.5 GB, which no process could ever receive (the kernel takes about 2 MiB of
//! arguments and environment together). `validate`, `run` and the server refuse it at once, with
//! one error, in a small multiple of the manifest's size: each runs here under a 1 GiB
//! address-space limit.

use std::fmt::Write as _;
use std::process::Command;

use trainctl_cli_harness::scratch::Scratch;
use trainctl_cli_harness::server::Server;
use trainctl_cli_harness::{binary, run_to_end};

/// What the error says after its field path.
const TOO_MUCH: &str = "expands to more than 2 MiB with the container's env and args before it, \
     the most a process's arguments and environment may hold together (each $(VAR) is replaced \
     by that variable's value)";

/// The probe: `V7` of 128,000 bytes, then 20,000 env entries of `$(V7)`, or as many args.
fn probe(in_args: bool) -> String {
    let mut env = format!(
        "                - {{name: V0, value: '{}'}}\n",
        "x".repeat(1000)
    );
    for step in 1..=7 {
        let before = step - 1;
        writeln!(
            env,
            "                - {{name: V{step}, value: '$(V{before})$(V{before})'}}"
        )
        .expect("writes");
    }
    let mut args = String::new();
    for at in 0..20_000 {
        if in_args {
            args.push_str("                - '$(V7)'\n");
        } else {
            writeln!(env, "                - {{name: F{at}, value: '$(V7)'}}").expect("writes");
        }
    }
    format!(
        "apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: bomb
spec:
  tfReplicaSpecs:
    Worker:
      restartPolicy: Never
      template:
        spec:
          containers:
            - name: tensorflow
              image: tf
              command: [echo]
              args:
{args}              env:
{env}"
    )
}

/// `trainctl ARGS` in `scratch` under a 1 GiB address-space limit.
fn bounded(scratch: &Scratch, args: &[&str]) -> trainctl_cli_harness::Run {
    let mut shell = Command::new("sh");
    shell
        .args(["-c", r#"ulimit -v 1048576 && exec "$0" "$@""#])
        .arg(binary());
    run_to_end(scratch.command_with(shell, args))
}

#[test]
fn many_env_entries_of_a_large_variable_are_refused_with_one_error() {
    let scratch = Scratch::new("expansion-env");
    scratch.write("bomb.yaml", &probe(false));
    let field = "spec.tfReplicaSpecs[Worker].template.spec.containers[0].env[22].value";
    for args in [
        &["validate", "-f", "bomb.yaml"][..],
        &["run", "-f", "bomb.yaml"],
    ] {
        let run = bounded(&scratch, args);
        assert_eq!(run.code, Some(2), "{args:?}: {run}");
        assert_eq!(
            run.stderr,
            format!("bomb.yaml:39:38: {field}: {TOO_MUCH}\n1 error\n"),
            "{args:?}"
        );
    }
}

#[test]
fn many_args_of_a_large_variable_are_refused_with_one_error() {
    let scratch = Scratch::new("expansion-args");
    scratch.write("bomb.yaml", &probe(true));
    let run = bounded(&scratch, &["validate", "-f", "bomb.yaml"]);
    assert_eq!(run.code, Some(2), "{run}");
    let field = "spec.tfReplicaSpecs[Worker].template.spec.containers[0].args[14]";
    assert!(
        run.stderr
            .ends_with(&format!(": {field}: {TOO_MUCH}\n1 error\n")),
        "{}",
        run.stderr
    );
}

#[test]
fn the_server_refuses_it_and_stays_up() {
    let server = Server::start(&[]);
    let (status, body) = server.request("POST", "/api/v1/jobs", Some(&probe(false)));
    assert_eq!(status, 400, "{body}");
    assert!(body.to_string().contains(TOO_MUCH), "{body}");
    let (status, _) = server.request("GET", "/healthz", None);
    assert_eq!(status, 200);
}
