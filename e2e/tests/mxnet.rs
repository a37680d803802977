//! MXJob on a real control plane: the operator, run as `deploy/manifests` runs it (no
//! `--enable-scheme`), watches MXJobs because `scripts/e2e` installs every CRD of `deploy/crds`;
//! an MXJob's pods carry upstream's `MX_CONFIG` and `DMLC_*` env with the Services' names, the
//! Scheduler decides a training job and the Tuner a tuning job. Run by `scripts/e2e`.

use std::fmt::Write as _;

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::Api;
use trainctl_api::JobKind;
use trainctl_e2e::{
    EXIT_CODE_ANNOTATION, IMAGE, RUN_SECONDS_ANNOTATION, await_last_condition, create_job,
    in_namespace, json_of, last_condition, pods_of_job,
};
use trainctl_engine::objects::{BuildOptions, build_objects};
use trainctl_operator::job;

/// An MXJob `name` in `mode` whose replica types are `types`: `(type, replicas, exits)`, the
/// replicas of a type that exits ending with 0 after 3 s, the others running until deleted.
fn mxjob(name: &str, mode: &str, types: &[(&str, u32, bool)]) -> String {
    let mut yaml = format!(
        "apiVersion: kubeflow.org/v1\nkind: MXJob\nmetadata: {{name: {name}}}\nspec:\n  \
         jobMode: {mode}\n  mxReplicaSpecs:\n"
    );
    for (replica_type, replicas, exits) in types {
        let annotations = if *exits {
            format!("{{{EXIT_CODE_ANNOTATION}: \"0\", {RUN_SECONDS_ANNOTATION}: \"3\"}}")
        } else {
            "{}".to_owned()
        };
        write!(
            yaml,
            "    {replica_type}:\n      replicas: {replicas}\n      template:\n        \
             metadata: {{annotations: {annotations}}}\n        spec:\n          containers:\n            \
             - {{name: mxnet, image: {IMAGE}, command: [sh, -c, 'echo \"$MX_CONFIG\"']}}\n"
        )
        .expect("writing to a String cannot fail");
    }
    yaml
}

#[tokio::test]
#[ignore = "needs the e2e control plane: scripts/e2e"]
async fn an_mxjob_gets_upstreams_env_and_succeeds_when_its_scheduler_does() {
    in_namespace("mxjob", |client, namespace| async move {
        let manifest = mxjob(
            "linear",
            "MXTrain",
            &[("Scheduler", 1, true), ("Server", 1, false), ("Worker", 2, false)],
        );
        create_job(&client, &namespace, &manifest).await;
        let job =
            await_last_condition(&client, &namespace, JobKind::MXJob, "linear", "Succeeded").await;
        assert_eq!(
            last_condition(&job),
            Some((
                "Succeeded".to_owned(),
                "True".to_owned(),
                "MXJobSucceeded".to_owned(),
                "MXJob linear is successfully completed.".to_owned(),
            ))
        );
        let expected = build_objects(
            &job::read(JobKind::MXJob, &job).expect("the job reads"),
            &BuildOptions::default(),
        );
        let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
        let names: Vec<String> = expected.pods.iter().map(ResourceExt::name_any).collect();
        assert_eq!(
            names,
            ["linear-scheduler-0", "linear-server-0", "linear-worker-0", "linear-worker-1"]
        );
        for want in &expected.pods {
            let got = pods.get(&want.name_any()).await.expect("the pod exists");
            assert_eq!(got.metadata.labels, want.metadata.labels, "{}", want.name_any());
            let (got, want) = (got.spec.expect("a spec"), want.spec.clone().expect("a spec"));
            assert_eq!(json_of(&got.containers[0].env), json_of(&want.containers[0].env));
        }
        let worker = pods.get("linear-worker-1").await.expect("the pod exists");
        let env: Vec<(String, String)> = worker.spec.expect("a spec").containers[0]
            .env
            .iter()
            .flatten()
            .map(|var| (var.name.clone(), var.value.clone().unwrap_or_default()))
            .collect();
        let config = r#"{"cluster":{"scheduler":[{"url":"linear-scheduler-0","port":9091}],"server":[{"url":"linear-server-0","port":9091}],"worker":[{"url":"linear-worker-0","port":9091},{"url":"linear-worker-1","port":9091}]},"labels":{"scheduler":"","server":"","worker":""},"task":{"type":"worker","index":1}}"#;
        let expected_env = [
            ("MX_CONFIG", config),
            ("DMLC_PS_ROOT_PORT", "9091"),
            ("DMLC_PS_ROOT_URI", "linear-scheduler-0"),
            ("DMLC_NUM_SERVER", "1"),
            ("DMLC_NUM_WORKER", "2"),
            ("DMLC_ROLE", "worker"),
            ("DMLC_USE_KUBERNETES", "1"),
            ("DMLC_WORKER_ID", "1"),
        ]
        .map(|(name, value)| (name.to_owned(), value.to_owned()));
        assert_eq!(env, expected_env);
        let server = pods_of_job(&client, &namespace, "linear").await["linear-server-0"].clone();
        assert_eq!(
            server.labels().get("training.kubeflow.org/job-role").map(String::as_str),
            Some("master")
        );
    })
    .await;
}

#[tokio::test]
#[ignore = "needs the e2e control plane: scripts/e2e"]
async fn a_tuning_mxjob_succeeds_when_its_tuner_does() {
    in_namespace("mxtune", |client, namespace| async move {
        let manifest = mxjob(
            "tvm",
            "MXTune",
            &[
                ("TunerTracker", 1, false),
                ("TunerServer", 1, false),
                ("Tuner", 1, true),
            ],
        );
        create_job(&client, &namespace, &manifest).await;
        let job =
            await_last_condition(&client, &namespace, JobKind::MXJob, "tvm", "Succeeded").await;
        assert_eq!(
            job.data["status"]["replicaStatuses"]["Tuner"]["succeeded"],
            1
        );
    })
    .await;
}
