//! The plain manifests (`deploy/manifests`, `deploy/install`): listed by their kustomizations,
//! each its Kubernetes type field for field, the Deployment, the metrics Service, the bindings and
//! the leader election Role; and the Helm chart's metadata.

use super::*;

#[test]
fn the_manifests_kustomization_lists_every_manifest_into_kubeflow() {
    let directory = repository().join("deploy/manifests");
    let kustomization = kustomization(&directory);
    assert_eq!(kustomization.namespace.as_deref(), Some(NAMESPACE));
    let listed: BTreeSet<String> = kustomization.resources.iter().cloned().collect();
    assert_eq!(
        listed.len(),
        kustomization.resources.len(),
        "a manifest is listed twice"
    );
    let mut files = yaml_files(&directory);
    files.remove("kustomization.yaml");
    assert_eq!(
        listed, files,
        "deploy/manifests/kustomization.yaml and the files differ"
    );
}

#[test]
fn the_full_install_lists_every_crd_and_the_operator() {
    let kustomization = kustomization(&repository().join("deploy"));
    let mut expected: Vec<String> = yaml_files(&repository().join("deploy/crds"))
        .into_iter()
        .map(|name| format!("crds/{name}"))
        .collect();
    expected.push("manifests".to_owned());
    assert_eq!(kustomization.resources, expected);
    assert_eq!(expected.len(), JobKind::ALL.len() + 1);
}

#[test]
fn every_manifest_reads_as_its_kubernetes_type() {
    let installation = manifests();
    assert_eq!(installation.service_accounts.len(), 1);
    assert_eq!(installation.cluster_roles.len(), 1);
    assert_eq!(installation.cluster_role_bindings.len(), 1);
    assert_eq!(installation.roles.len(), 1);
    assert_eq!(installation.role_bindings.len(), 1);
    assert_eq!(installation.deployments.len(), 1);
    assert_eq!(installation.services.len(), 1);
    assert!(installation.crds.is_empty(), "the CRDs live in deploy/crds");
}

#[test]
fn a_misspelled_field_is_caught() {
    let document = json!({
        "apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": OPERATOR, "lables": {"a": "b"}},
    });
    assert_eq!(
        typed::<ServiceAccount>(&document).map(drop),
        Err("the ServiceAccount has a field Kubernetes does not know: \
             .metadata.lables: {\"a\":\"b\"} != absent"
            .to_owned())
    );
}

#[test]
fn the_deployment_passes_only_arguments_trainctl_operator_accepts() {
    let container = manifests().container().clone();
    let args = container.args.unwrap_or_default();
    assert_eq!(
        args,
        [
            "--leader-elect",
            "--metrics-bind-address=:8080",
            "--health-probe-bind-address=:8081",
            "--log-format=json",
        ]
    );
    assert_operator_accepts("deploy/manifests/deployment.yaml", &args);
}

#[test]
fn the_deployment_runs_this_version_locked_down_with_probes_on_the_health_port() {
    let installation = manifests();
    let deployment = installation.deployment();
    let spec = &deployment.spec;
    assert_eq!(spec.replicas, Some(1));
    let pod = spec.template.spec.as_ref().expect("a pod spec");
    assert_eq!(pod.service_account_name.as_deref(), Some(OPERATOR));
    let container = installation.container();
    assert_eq!(
        container.image.as_deref(),
        Some(format!("trainctl:{}", env!("CARGO_PKG_VERSION")).as_str())
    );
    assert_eq!(
        json(&pod.security_context),
        json!({"runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532,
               "seccompProfile": {"type": "RuntimeDefault"}})
    );
    assert_eq!(
        json(&container.security_context),
        json!({"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
               "runAsNonRoot": true, "capabilities": {"drop": ["ALL"]}})
    );
    assert_eq!(
        json(&container.ports),
        json!([{"name": "metrics", "containerPort": 8080, "protocol": "TCP"},
               {"name": "health", "containerPort": 8081, "protocol": "TCP"}])
    );
    assert_eq!(
        json(&container.liveness_probe)["httpGet"],
        json!({"path": "/healthz", "port": "health"})
    );
    assert_eq!(
        json(&container.readiness_probe)["httpGet"],
        json!({"path": "/readyz", "port": "health"})
    );
    assert_eq!(
        json(&container.env),
        json!([
            {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        ])
    );
    assert_eq!(
        json(&container.resources),
        json!({"requests": {"cpu": "50m", "memory": "64Mi"},
               "limits": {"cpu": "1", "memory": "512Mi"}})
    );
}

#[test]
fn the_metrics_service_selects_the_operator_pods_on_the_metrics_port() {
    let installation = manifests();
    let service = only(&installation.services, "Service");
    let spec = service.spec.as_ref().expect("a spec");
    let pod_labels = installation
        .deployment()
        .spec
        .template
        .metadata
        .as_ref()
        .and_then(|metadata| metadata.labels.clone())
        .expect("pod labels");
    let selector = spec.selector.clone().expect("a selector");
    assert!(!selector.is_empty());
    for (key, value) in &selector {
        assert_eq!(
            pod_labels.get(key),
            Some(value),
            "the Service selects {key}={value}"
        );
    }
    assert_eq!(
        serde_json::to_value(&spec.ports).expect("serializes"),
        json!([{"name": "metrics", "port": 8080, "targetPort": "metrics", "protocol": "TCP"}])
    );
}

#[test]
fn the_bindings_give_the_roles_to_the_operator_service_account() {
    let installation = manifests();
    let account = only(&installation.service_accounts, "ServiceAccount");
    assert_eq!(account.metadata.name.as_deref(), Some(OPERATOR));
    let subject = json!([{"kind": "ServiceAccount", "name": OPERATOR, "namespace": NAMESPACE}]);
    let binding = only(&installation.cluster_role_bindings, "ClusterRoleBinding");
    assert_eq!(
        serde_json::to_value(&binding.role_ref).expect("serializes"),
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": OPERATOR})
    );
    assert_eq!(
        serde_json::to_value(&binding.subjects).expect("serializes"),
        subject
    );
    let role = only(&installation.roles, "Role");
    let binding = only(&installation.role_bindings, "RoleBinding");
    assert_eq!(binding.role_ref.kind, "Role");
    assert_eq!(
        binding.role_ref.name,
        role.metadata.name.clone().expect("a name")
    );
    assert_eq!(
        serde_json::to_value(&binding.subjects).expect("serializes"),
        subject
    );
}

#[test]
fn the_leader_election_role_reads_and_writes_leases_only() {
    let installation = manifests();
    let role = only(&installation.roles, "Role");
    assert_eq!(
        serde_json::to_value(&role.rules).expect("serializes"),
        json!([{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                "verbs": ["get", "create", "update"]}])
    );
}

#[test]
fn the_helm_chart_follows_the_workspace_version_and_ships_no_crds() {
    let chart = repository().join("deploy/helm/trainctl-operator");
    let metadata: Value = serde_saphyr::from_str(&read(&chart.join("Chart.yaml"))).expect("YAML");
    assert_eq!(metadata["apiVersion"], "v2");
    assert_eq!(metadata["name"], OPERATOR);
    assert_eq!(metadata["appVersion"], env!("CARGO_PKG_VERSION"));
    let values: Value = serde_saphyr::from_str(&read(&chart.join("values.yaml"))).expect("YAML");
    assert_eq!(
        values["image"],
        json!({"repository": "trainctl", "tag": "", "pullPolicy": "IfNotPresent"})
    );
    // Helm keeps a release, chart files included, in one Secret of at most 1 MiB: the seven CRDs
    // alone take about 1.39 MB there (deploy/helm/trainctl-operator/README.md).
    assert!(
        !chart.join("crds").exists(),
        "the CRDs do not fit in a Helm release"
    );
}
