//! A new MXJob on a cluster: its pods get upstream's `MX_CONFIG` and `DMLC_*` variables with the
//! Services' names (and no `DMLC_NODE_HOST`, which only this machine adds), every Server carries
//! the master role, and the job is `Created` in upstream's words.

use super::*;

const MX_JOB: &str = r"
apiVersion: kubeflow.org/v1
kind: MXJob
metadata: {name: mnist, namespace: ml, uid: job-uid}
spec:
  jobMode: MXTrain
  mxReplicaSpecs:
    Scheduler:
      template: {spec: {containers: [{name: mxnet, image: mx}]}}
    Server:
      template: {spec: {containers: [{name: mxnet, image: mx}]}}
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: mxnet, image: mx}, {name: sidecar, image: s}]}}
";

const SLOTS: [&str; 4] = [
    "mnist-scheduler-0",
    "mnist-server-0",
    "mnist-worker-0",
    "mnist-worker-1",
];

/// `(name, value)` of each env var of the pod's container `index`.
fn env(pod: &Value, index: usize) -> Vec<(String, String)> {
    pod["spec"]["containers"][index]["env"]
        .as_array()
        .expect("an env")
        .iter()
        .map(|var| {
            let text = |key: &str| var[key].as_str().unwrap_or_default().to_owned();
            (text("name"), text("value"))
        })
        .collect()
}

#[tokio::test]
async fn new_mxjob_pods_get_mx_config_and_ps_lites_variables_with_service_names() {
    let job = job(MX_JOB);
    let (ctx, handle) = context();
    let server = serve(handle, cluster(&job));
    let outcome = reconcile_at(JobKind::MXJob, &object(MX_JOB), &ctx, &no_children(), now()).await;
    let (sent, _) = finish(ctx, server).await;
    assert_eq!(outcome.expect("reconciled"), Action::await_change());

    let services = applied(&sent, "services");
    assert_eq!(names(&services), SLOTS);
    assert_eq!(
        services[0].1["spec"]["ports"],
        json!([{"name": "mxjob-port", "port": 9091}])
    );
    let pods = applied(&sent, "pods");
    assert_eq!(names(&pods), SLOTS);

    let cluster = r#"{"cluster":{"scheduler":[{"url":"mnist-scheduler-0","port":9091}],"server":[{"url":"mnist-server-0","port":9091}],"worker":[{"url":"mnist-worker-0","port":9091},{"url":"mnist-worker-1","port":9091}]},"labels":{"scheduler":"","server":"","worker":""},"task":"#;
    let expected = |role: &str, index: usize| {
        let mut vars = vec![
            (
                "MX_CONFIG".to_owned(),
                format!(r#"{cluster}{{"type":"{role}","index":{index}}}}}"#),
            ),
            ("DMLC_PS_ROOT_PORT".to_owned(), "9091".to_owned()),
            (
                "DMLC_PS_ROOT_URI".to_owned(),
                "mnist-scheduler-0".to_owned(),
            ),
            ("DMLC_NUM_SERVER".to_owned(), "1".to_owned()),
            ("DMLC_NUM_WORKER".to_owned(), "2".to_owned()),
            ("DMLC_ROLE".to_owned(), role.to_owned()),
            ("DMLC_USE_KUBERNETES".to_owned(), "1".to_owned()),
        ];
        if role == "worker" {
            vars.push(("DMLC_WORKER_ID".to_owned(), index.to_string()));
        }
        vars
    };
    assert_eq!(env(pods[0].1, 0), expected("scheduler", 0));
    assert_eq!(env(pods[1].1, 0), expected("server", 0));
    assert_eq!(env(pods[3].1, 0), expected("worker", 1));
    assert_eq!(env(pods[3].1, 1), expected("worker", 1), "the sidecar too");

    let role = |pod: &Value| pod["metadata"]["labels"]["training.kubeflow.org/job-role"].clone();
    assert_eq!(
        pods.iter().map(|(_, pod)| role(pod)).collect::<Vec<_>>(),
        [json!(null), json!("master"), json!(null), json!(null)]
    );
    for (_, pod) in &pods {
        assert_eq!(
            pod["metadata"]["labels"]["training.kubeflow.org/operator-name"],
            "mxjob-controller"
        );
        assert_eq!(pod["spec"]["restartPolicy"], "Never");
    }

    let status = sent
        .iter()
        .find(|s| s.path() == "/apis/kubeflow.org/v1/namespaces/ml/mxjobs/mnist/status")
        .expect("a status");
    assert_eq!(status.body["kind"], "MXJob");
    assert_eq!(
        status.body["status"]["conditions"][0]["message"],
        "MXJob mnist is created."
    );
}
