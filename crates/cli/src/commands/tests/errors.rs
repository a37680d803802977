//! Failures on a cluster: each one line that says what is wrong and what to do.

use super::*;

#[tokio::test]
async fn a_kind_whose_crd_is_missing_says_how_to_install_it() {
    let outcome = trainctl(&["get", "tfjobs"], |_| {
        status(
            404,
            "NotFound",
            "the server could not find the requested resource",
            None,
        )
    })
    .await;
    assert_eq!(
        outcome.code,
        Err(
            "the TFJob CRD is not installed in the cluster; install it with: \
             trainctl crd | kubectl apply --server-side -f -"
                .to_owned()
        )
    );
}

#[tokio::test]
async fn a_cluster_without_any_job_crd_says_how_to_install_them() {
    for args in [&["get"][..], &["describe", "mnist"], &["logs", "mnist"]] {
        // Not even the group: the API server answers its plain-text 404.
        let outcome = trainctl(args, |_| Reply::Json(404, json!("404 page not found"))).await;
        assert_eq!(
            outcome.code,
            Err(
                "no training job CRD (TFJob, PyTorchJob, XGBoostJob, PaddleJob, JAXJob, MPIJob, \
                 MXJob) is installed in the cluster; install them with: trainctl crd | kubectl \
                 apply --server-side -f -"
                    .to_owned()
            ),
            "{args:?}"
        );
        assert_eq!(
            outcome.sent.len(),
            trainctl_api::JobKind::ALL.len(),
            "{args:?}: one request per kind"
        );
    }
}

#[tokio::test]
async fn forbidden_names_the_verb_the_resource_and_the_namespace() {
    let message = "tfjobs.kubeflow.org is forbidden: User \"alice\" cannot list resource \
                   \"tfjobs\" in API group \"kubeflow.org\" in the namespace \"ml\"";
    let outcome = trainctl(&["get", "tfjobs", "-n", "ml"], move |_| {
        status(403, "Forbidden", message, None)
    })
    .await;
    assert_eq!(
        outcome.code,
        Err(format!(
            "forbidden: this user may not list tfjobs.kubeflow.org in namespace \"ml\" (RBAC): \
             {message}"
        ))
    );
}

#[tokio::test]
async fn forbidden_logs_name_pods_log() {
    let outcome = trainctl(&["logs", "tfjob", "mnist"], |sent| match sent.path() {
        "/apis/kubeflow.org/v1/namespaces/default/tfjobs/mnist" => {
            Reply::Json(200, tfjob(running()))
        }
        "/api/v1/namespaces/default/pods" => {
            list(vec![pod("chief", 0, "node-a", running_since(9), 0)])
        }
        _ => status(
            403,
            "Forbidden",
            "pods \"mnist-chief-0\" is forbidden",
            None,
        ),
    })
    .await;
    assert_eq!(
        outcome.code,
        Err(
            "forbidden: this user may not get pods/log in namespace \"default\" (RBAC): \
             pods \"mnist-chief-0\" is forbidden"
                .to_owned()
        )
    );
}

#[tokio::test]
async fn refused_credentials_name_the_server() {
    let outcome = trainctl(&["get", "tfjobs"], |_| {
        status(401, "Unauthorized", "Unauthorized", None)
    })
    .await;
    assert_eq!(
        outcome.code,
        Err(
            "the cluster at https://cluster.test refused the kubeconfig's credentials (HTTP 401): \
             Unauthorized; log in again or check the context's user"
                .to_owned()
        )
    );
}
