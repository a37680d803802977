//! Sizes the kernel refuses: a job whose replicas cannot run as written, because one of their
//! environment strings is too long, fails at once with the reason, in a message of bounded
//! length, instead of every exec failing.

use super::*;

#[test]
fn a_tf_config_too_large_for_one_environment_string_fails_the_job_at_once() {
    let scratch = Scratch::new("tf-config-size");
    // 7,500 workers: each TF_CONFIG names 7,500 loopback addresses, about 132 KiB.
    let manifest = scratch.write(
        "job.yaml",
        &tfjob("wide", &[], &[replicas("Worker", 7_500, "Never", "true")]),
    );
    let run = scratch.run(&manifest, &["-q"]);
    assert_eq!(run.code, Some(1), "{run}");
    let failed: Vec<&str> = run
        .stderr
        .lines()
        .filter(|line| line.starts_with("trainctl: Failed: "))
        .collect();
    // Where this machine's open files cannot hold 7,500 replicas, that is said after.
    assert!(
        matches!(failed.as_slice(), [line] if line.starts_with(
            "trainctl: Failed: cannot run on this machine: worker-0: replica wide-worker-0: env \
             TF_CONFIG: its value is 132 KiB, more than the 128 KiB one environment string may \
             hold (the kernel's MAX_ARG_STRLEN); TF_CONFIG names every replica of the job: run \
             fewer replicas on this machine (about 7,000 fit), or on a cluster; and 7499 more \
             replicas"
        )),
        "{run}"
    );
}
