//! Tests of the words of conditions and events, per kind, on jobs written as scenarios.

use super::*;
use crate::reconcile::scenario::job;

#[test]
fn messages_are_worded_as_upstream_per_kind() {
    let cases: &[(&str, &str, &str, &str)] = &[
        (
            "TFJob Worker=1",
            "TFJob ml/mnist is running.",
            "TFJob ml/mnist successfully completed.",
            "TFJob ml/mnist has failed because 2 Worker replica(s) failed.",
        ),
        (
            "PyTorchJob Master=1 Worker=1",
            "PyTorchJob mnist is running.",
            "PyTorchJob mnist is successfully completed.",
            "PyTorchJob mnist is failed because 2 Worker replica(s) failed.",
        ),
        (
            "PyTorchJob Worker=1",
            "PyTorchJob ml/mnist is running.",
            "PyTorchJob ml/mnist successfully completed.",
            "PyTorchJob mnist is failed because 2 Worker replica(s) failed.",
        ),
        (
            "PaddleJob Worker=1",
            "PaddleJob ml/mnist is running.",
            "PaddleJob ml/mnist successfully completed.",
            "PaddleJob mnist is failed because 2 Worker replica(s) failed.",
        ),
        (
            "XGBoostJob Master=1 Worker=1",
            "XGBoostJob mnist is running.",
            "XGBoostJob mnist is successfully completed.",
            "XGBoostJob mnist is failed because 2 Worker replica(s) failed.",
        ),
        (
            "JAXJob Worker=1",
            "JAXJob ml/mnist is running.",
            "JAXJob ml/mnist successfully completed.",
            "JAXJob mnist is failed because 2 Worker replica(s) failed.",
        ),
        (
            "MPIJob Launcher=1 Worker=1",
            "MPIJob mnist is running.",
            "MPIJob mnist is successfully completed.",
            "MPIJob mnist is failed because 2 Worker replica(s) failed.",
        ),
        (
            "MXJob jobMode=MXTrain Scheduler=1 Worker=1",
            "MXJob mnist is running.",
            "MXJob mnist is successfully completed.",
            "mxjob mnist is failed because 2 Worker replica(s) failed.",
        ),
    ];
    for (shape, running, succeeded, failed) in cases {
        let job = job(shape);
        let kind = job.kind();
        let words = Wording::new(&job);
        assert_eq!(words.running(), *running, "{shape}");
        assert_eq!(words.succeeded(), *succeeded, "{shape}");
        assert_eq!(
            words.replicas_failed(2, &ReplicaType::Worker),
            *failed,
            "{shape}"
        );
        assert_eq!(words.created(), format!("{kind} mnist is created."));
        assert_eq!(words.suspended(), format!("{kind} mnist is suspended."));
        assert_eq!(words.resumed(), format!("{kind} mnist is resumed."));
    }
}

#[test]
fn mxnet_restarting_names_the_kind_in_lowercase_as_upstream() {
    let job = job("MXJob jobMode=MXTrain Scheduler=1 Server=1/ExitCode");
    assert_eq!(
        Wording::new(&job).restarting(1, &ReplicaType::Server),
        "mxjob mnist is restarting because 1 Server replica(s) failed."
    );
    assert_eq!(
        Wording::new(&job).reason(JobConditionType::Restarting),
        "MXJobRestarting"
    );
}

#[test]
fn reasons_are_kind_and_type_without_spaces() {
    let job = job("MPIJob Launcher=1");
    let words = Wording::new(&job);
    assert_eq!(words.reason(JobConditionType::Succeeded), "MPIJobSucceeded");
    assert_eq!(words.reason(JobConditionType::Failed), "MPIJobFailed");
    assert_eq!(words.resumed_reason(), "MPIJobResumed");
}

#[test]
fn backoff_and_deadline_messages_name_the_job() {
    let job = job("TFJob Worker=1");
    let words = Wording::new(&job);
    assert_eq!(
        words.backoff_limit_reached(),
        "Job mnist has failed because it has reached the specified backoff limit"
    );
    assert_eq!(
        words.deadline_exceeded(),
        "Job mnist has failed because it was active longer than specified deadline"
    );
    assert_eq!(
        words.exited_with_code("mnist-worker-0", 137),
        "Pod: ml.mnist-worker-0 exited with code 137"
    );
}
