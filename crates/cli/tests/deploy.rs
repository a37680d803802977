//! `deploy/` holds together with the code (docs/deploy.md): every manifest reads as its
//! Kubernetes type field for field, the Deployment passes only arguments `trainctl operator`
//! accepts, the `ClusterRole` allows what the operator does and covers what it grants MPI
//! launchers, versions follow the workspace, and the Grafana dashboard queries the operator's
//! metrics through a data source variable.
//!
//! Rendering needs tools a machine may not have: the Helm chart (`helm template`) and the
//! kustomizations (`kubectl kustomize`) are checked by ignored tests, which `.ci/run` runs when
//! the tool is installed.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::trainctl;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Container, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding};
use serde::Deserialize;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use trainctl_api::JobKind;
use trainctl_engine::objects::{BuildOptions, build_objects};

/// The namespace the plain manifests install into, as the Kubeflow training operator's do.
const NAMESPACE: &str = "kubeflow";

/// The operator's service account, and the name of its `ClusterRole` and binding.
const OPERATOR: &str = "trainctl-operator";

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()))
}

/// The YAML documents of `text`, without empty ones (a leading `---` gives one).
fn documents(source: &str, text: &str) -> Vec<Value> {
    serde_saphyr::from_multiple::<Value>(text)
        .unwrap_or_else(|error| panic!("{source} is not YAML: {error}"))
        .into_iter()
        .filter(|document| !document.is_null())
        .collect()
}

/// Where two JSON values first differ: the path, and each side's value there.
fn first_difference(path: &str, left: &Value, right: &Value) -> Option<String> {
    let show = |value: Option<&Value>| value.map_or_else(|| "absent".to_owned(), Value::to_string);
    match (left, right) {
        (Value::Object(l), Value::Object(r)) => {
            l.keys()
                .chain(r.keys())
                .find_map(|key| match (l.get(key), r.get(key)) {
                    (Some(l), Some(r)) => first_difference(&format!("{path}.{key}"), l, r),
                    (l, r) => Some(format!("{path}.{key}: {} != {}", show(l), show(r))),
                })
        }
        (Value::Array(l), Value::Array(r)) if l.len() == r.len() => l
            .iter()
            .zip(r)
            .enumerate()
            .find_map(|(i, (l, r))| first_difference(&format!("{path}[{i}]"), l, r)),
        _ => (left != right).then(|| format!("{path}: {left} != {right}")),
    }
}

/// `document` read as `T`, which must give back the very same document: serde drops a field
/// that `T` does not have (a typo, a wrong indentation) without a word.
fn typed<T: DeserializeOwned + Serialize>(document: &Value) -> Result<T, String> {
    let kind = document["kind"].as_str().unwrap_or("object");
    let object: T = serde_json::from_value(document.clone())
        .map_err(|error| format!("not a valid {kind}: {error}"))?;
    match first_difference("", document, &json(&object)) {
        Some(difference) => Err(format!(
            "the {kind} has a field Kubernetes does not know: {difference}"
        )),
        None => Ok(object),
    }
}

/// A value as JSON.
fn json<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("a Kubernetes object serializes")
}

/// The objects of one installation of the operator, by kind, each checked by [`typed`].
#[derive(Default)]
struct Installation {
    service_accounts: Vec<ServiceAccount>,
    cluster_roles: Vec<ClusterRole>,
    cluster_role_bindings: Vec<ClusterRoleBinding>,
    roles: Vec<Role>,
    role_bindings: Vec<RoleBinding>,
    deployments: Vec<Deployment>,
    services: Vec<Service>,
    /// CustomResourceDefinitions, by name, as read.
    crds: Vec<Value>,
}

impl Installation {
    fn add(&mut self, source: &str, document: &Value) {
        fn push<T: DeserializeOwned + Serialize>(
            list: &mut Vec<T>,
            source: &str,
            document: &Value,
        ) {
            list.push(typed(document).unwrap_or_else(|error| panic!("{source}: {error}")));
        }
        match document["kind"].as_str() {
            Some("ServiceAccount") => push(&mut self.service_accounts, source, document),
            Some("ClusterRole") => push(&mut self.cluster_roles, source, document),
            Some("ClusterRoleBinding") => push(&mut self.cluster_role_bindings, source, document),
            Some("Role") => push(&mut self.roles, source, document),
            Some("RoleBinding") => push(&mut self.role_bindings, source, document),
            Some("Deployment") => push(&mut self.deployments, source, document),
            Some("Service") => push(&mut self.services, source, document),
            Some("CustomResourceDefinition") => self.crds.push(document.clone()),
            other => panic!("{source}: an object the installation has no use for: {other:?}"),
        }
    }

    fn from_yaml(source: &str, text: &str) -> Installation {
        let mut installation = Installation::default();
        for document in documents(source, text) {
            installation.add(source, &document);
        }
        installation
    }

    fn deployment(&self) -> &Deployment {
        only(&self.deployments, "Deployment")
    }

    fn container(&self) -> &Container {
        let pod = self.deployment().spec.template.spec.as_ref();
        let containers = &pod.expect("the Deployment has a pod spec").containers;
        only(containers, "container")
    }

    fn cluster_role_rules(&self) -> &[PolicyRule] {
        only(&self.cluster_roles, "ClusterRole")
            .rules
            .as_deref()
            .unwrap_or_default()
    }
}

fn only<'a, T>(items: &'a [T], what: &str) -> &'a T {
    assert_eq!(items.len(), 1, "expected exactly one {what}");
    &items[0]
}

/// A `kustomization.yaml`, with the fields deploy/ uses (any other is refused).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Kustomization {
    api_version: String,
    kind: String,
    namespace: Option<String>,
    resources: Vec<String>,
}

fn kustomization(directory: &Path) -> Kustomization {
    let path = directory.join("kustomization.yaml");
    let kustomization: Kustomization = serde_saphyr::from_str(&read(&path))
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    assert_eq!(kustomization.api_version, "kustomize.config.k8s.io/v1beta1");
    assert_eq!(kustomization.kind, "Kustomization");
    kustomization
}

/// The plain manifests, `deploy/manifests`, file by file as kustomization.yaml lists them.
fn manifests() -> Installation {
    let directory = repository().join("deploy/manifests");
    let mut installation = Installation::default();
    for resource in kustomization(&directory).resources {
        let source = format!("deploy/manifests/{resource}");
        for document in documents(&source, &read(&directory.join(&resource))) {
            installation.add(&source, &document);
        }
    }
    installation
}

/// The YAML files of a directory, by name.
fn yaml_files(directory: &Path) -> BTreeSet<String> {
    std::fs::read_dir(directory)
        .unwrap_or_else(|error| panic!("cannot list {}: {error}", directory.display()))
        .map(|entry| {
            entry
                .expect("a directory entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| {
            Path::new(name)
                .extension()
                .is_some_and(|extension| extension == "yaml")
        })
        .collect()
}

/// Whether `rules` allow `verb` on `resource` of `group`, for the object `name`.
fn allows(
    rules: &[PolicyRule],
    group: &str,
    resource: &str,
    verb: &str,
    name: Option<&str>,
) -> bool {
    let has = |items: Option<&Vec<String>>, wanted: &str| {
        items.is_some_and(|items| items.iter().any(|item| item == wanted || item == "*"))
    };
    rules.iter().any(|rule| {
        has(rule.api_groups.as_ref(), group)
            && has(rule.resources.as_ref(), resource)
            && has(Some(&rule.verbs), verb)
            && match (&rule.resource_names, name) {
                (None, _) => true,
                (Some(names), _) if names.is_empty() => true,
                (Some(names), Some(name)) => names.iter().any(|allowed| allowed == name),
                (Some(_), None) => false,
            }
    })
}

/// The API group of an `apiVersion` (`""` for the core group's `v1`).
fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(group, _)| group)
}

/// Asserts that `trainctl operator` accepts `args`. clap parses every argument before
/// `--help`, values included, so `--help` at the end exits 0 only if each one is accepted.
fn assert_operator_accepts(source: &str, args: &[String]) {
    // Until `trainctl operator` lands (issue 6) there is no subcommand to ask.
    if trainctl(&["operator", "--help"]).code != Some(0) {
        eprintln!("`trainctl operator` does not exist yet: {source}'s arguments are not checked");
        return;
    }
    let mut command: Vec<&str> = vec!["operator"];
    command.extend(args.iter().map(String::as_str));
    command.push("--help");
    let run = trainctl(&command);
    assert_eq!(
        run.code,
        Some(0),
        "{source}: `trainctl operator` refuses its arguments {args:?}: {}",
        run.stderr
    );
}

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
fn the_cluster_role_covers_every_job_kind_its_status_and_finalizers() {
    let installation = manifests();
    let rules = installation.cluster_role_rules();
    for kind in JobKind::ALL {
        let plural = kind.plural();
        for verb in ["list", "watch", "patch", "delete"] {
            assert!(
                allows(rules, "kubeflow.org", plural, verb, None),
                "{verb} {plural}"
            );
        }
        assert!(allows(
            rules,
            "kubeflow.org",
            &format!("{plural}/status"),
            "patch",
            None
        ));
        assert!(allows(
            rules,
            "kubeflow.org",
            &format!("{plural}/finalizers"),
            "update",
            None
        ));
        // Least privilege: nothing the operator does not do.
        for verb in ["get", "create", "update"] {
            assert!(
                !allows(rules, "kubeflow.org", plural, verb, None),
                "{verb} {plural}"
            );
        }
    }
    let kinds: BTreeSet<&str> = rules
        .iter()
        .filter(|rule| {
            rule.api_groups
                .as_ref()
                .is_some_and(|groups| *groups == ["kubeflow.org"])
        })
        .flat_map(|rule| rule.resources.iter().flatten())
        .map(|resource| resource.split('/').next().unwrap_or_default())
        .collect();
    let expected: BTreeSet<&str> = JobKind::ALL.iter().map(|kind| kind.plural()).collect();
    assert_eq!(kinds, expected);
}

/// A small MPIJob: the kind that makes the operator create the most kinds of objects.
const MPI_JOB: &str = "\
apiVersion: kubeflow.org/v1
kind: MPIJob
metadata: {name: pi, namespace: ml}
spec:
  slotsPerWorker: 1
  mpiReplicaSpecs:
    Launcher:
      template:
        spec:
          containers: [{name: launcher, image: mpioperator/mpi-pi, command: [mpirun, /home/mpiuser/pi]}]
    Worker:
      replicas: 2
      template:
        spec:
          containers: [{name: worker, image: mpioperator/mpi-pi}]
";

/// A TFJob with a PS and two workers: pods and services.
const TF_JOB: &str = "\
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: mnist, namespace: ml}
spec:
  tfReplicaSpecs:
    PS: {template: {spec: {containers: [{name: tensorflow, image: tf}]}}}
    Worker: {replicas: 2, template: {spec: {containers: [{name: tensorflow, image: tf}]}}}
";

/// An object's apiVersion and name, with the `plural` of its resource.
fn named<T: Serialize>(plural: &'static str, object: &T) -> (String, &'static str, String) {
    let value = json(object);
    let api_version = value["apiVersion"]
        .as_str()
        .expect("an apiVersion")
        .to_owned();
    let name = value["metadata"]["name"]
        .as_str()
        .expect("a name")
        .to_owned();
    (api_version, plural, name)
}

/// Every object the operator would create for `manifest`, as (apiVersion, plural, name).
fn created_objects(manifest: &str) -> Vec<(String, &'static str, String)> {
    let loaded = trainctl_api::manifest::load_str("job.yaml", manifest);
    assert!(!loaded.has_errors(), "{:?}", loaded.diagnostics);
    let job = &only(&loaded.jobs, "job").job;
    let objects = build_objects(job, &BuildOptions::default());
    let mut created = Vec::new();
    created.extend(objects.pods.iter().map(|object| named("pods", object)));
    created.extend(
        objects
            .services
            .iter()
            .map(|object| named("services", object)),
    );
    created.extend(
        objects
            .config_maps
            .iter()
            .map(|object| named("configmaps", object)),
    );
    created.extend(objects.roles.iter().map(|object| named("roles", object)));
    created.extend(
        objects
            .role_bindings
            .iter()
            .map(|object| named("rolebindings", object)),
    );
    created.extend(
        objects
            .service_accounts
            .iter()
            .map(|object| named("serviceaccounts", object)),
    );
    created
}

#[test]
fn the_cluster_role_allows_creating_every_object_the_operator_makes() {
    let installation = manifests();
    let rules = installation.cluster_role_rules();
    let mut plurals = BTreeSet::new();
    for manifest in [MPI_JOB, TF_JOB] {
        for (api_version, plural, name) in created_objects(manifest) {
            let group = group_of(&api_version);
            // Pods, services and the launcher's service account are created with a plain create;
            // the launcher's ConfigMap, Role and RoleBinding by server-side apply, which is
            // authorized as create and as patch.
            let verbs: &[&str] = match plural {
                "pods" | "services" | "serviceaccounts" => &["create"],
                _ => &["create", "patch"],
            };
            for verb in verbs {
                assert!(
                    allows(rules, group, plural, verb, Some(&name)),
                    "{verb} {plural} {name}"
                );
            }
            plurals.insert(plural);
        }
    }
    assert_eq!(
        plurals,
        BTreeSet::from([
            "configmaps",
            "pods",
            "rolebindings",
            "roles",
            "serviceaccounts",
            "services"
        ])
    );
}

#[test]
fn the_operator_holds_every_permission_it_grants_an_mpi_launcher() {
    let loaded = trainctl_api::manifest::load_str("pi.yaml", MPI_JOB);
    let objects = build_objects(&only(&loaded.jobs, "job").job, &BuildOptions::default());
    let launcher = only(&objects.roles, "launcher Role");
    let granted = launcher.rules.as_deref().unwrap_or_default();
    assert!(
        granted
            .iter()
            .any(|rule| rule.resources.iter().flatten().any(|r| r == "pods/exec")),
        "the launcher's Role grants pods/exec"
    );
    let installation = manifests();
    let held = installation.cluster_role_rules();
    for rule in granted {
        let names: Vec<Option<&str>> = match &rule.resource_names {
            Some(names) if !names.is_empty() => names.iter().map(|n| Some(n.as_str())).collect(),
            _ => vec![None],
        };
        for group in rule.api_groups.iter().flatten() {
            for resource in rule.resources.iter().flatten() {
                for verb in &rule.verbs {
                    for name in &names {
                        assert!(
                            allows(held, group, resource, verb, *name),
                            "the launcher's Role grants {verb} {resource} {name:?}, which the \
                             operator does not hold: Kubernetes would refuse to create the Role"
                        );
                    }
                }
            }
        }
    }
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
    // Helm keeps a release, chart files included, in one Secret of at most 1 MiB: the six CRDs
    // alone take about 1.19 MB there (deploy/helm/trainctl-operator/README.md).
    assert!(
        !chart.join("crds").exists(),
        "the CRDs do not fit in a Helm release"
    );
}

/// The metrics `trainctl operator` serves (docs/semantics.md §7, docs/operator.md), as the
/// dashboard queries them: a histogram by its `_bucket` and `_count` series.
const OPERATOR_METRICS: [&str; 10] = [
    "trainctl_leader",
    "trainctl_queue_depth",
    "trainctl_reconcile_duration_seconds_bucket",
    "trainctl_reconcile_duration_seconds_count",
    "trainctl_reconcile_errors_total",
    "training_operator_jobs_created_total",
    "training_operator_jobs_deleted_total",
    "training_operator_jobs_failed_total",
    "training_operator_jobs_restarted_total",
    "training_operator_jobs_successful_total",
];

#[test]
fn the_grafana_dashboard_queries_the_operator_metrics_through_a_datasource_variable() {
    let path = repository().join("deploy/grafana/trainctl-operator.json");
    let dashboard: Value = serde_json::from_str(&read(&path)).expect("JSON");
    let variables = dashboard["templating"]["list"]
        .as_array()
        .expect("variables");
    assert_eq!(variables[0]["name"], "datasource");
    assert_eq!(variables[0]["type"], "datasource");
    assert_eq!(variables[0]["query"], "prometheus");
    let source = json!({"type": "prometheus", "uid": "${datasource}"});
    let mut queries = Vec::new();
    for variable in &variables[1..] {
        assert_eq!(
            variable["datasource"], source,
            "variable {}",
            variable["name"]
        );
        queries.push(variable["definition"].as_str().expect("a query").to_owned());
    }
    let panels = dashboard["panels"].as_array().expect("panels");
    for panel in panels.iter().filter(|panel| panel["type"] != "row") {
        assert_eq!(panel["datasource"], source, "panel {}", panel["title"]);
        for target in panel["targets"].as_array().expect("targets") {
            assert_eq!(target["datasource"], source, "panel {}", panel["title"]);
            queries.push(target["expr"].as_str().expect("an expression").to_owned());
        }
    }
    let metrics: BTreeSet<&str> = queries
        .iter()
        .flat_map(|query| query.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')))
        .filter(|word| word.starts_with("trainctl_") || word.starts_with("training_operator_"))
        .collect();
    assert_eq!(metrics, BTreeSet::from(OPERATOR_METRICS));
    for quantile in ["0.5", "0.99"] {
        assert!(
            queries
                .iter()
                .any(|query| query.starts_with(&format!("histogram_quantile({quantile}, "))),
            "a p{quantile} panel"
        );
    }
}

/// Runs `program` with `args` in the repository; its standard output.
fn run_tool(program: &str, args: &[&str]) -> String {
    let output = Command::new(program)
        .args(args)
        .current_dir(repository())
        .output()
        .unwrap_or_else(|error| panic!("cannot run {program} (is it installed?): {error}"));
    assert!(
        output.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8")
}

fn helm_template(values: &[&str]) -> Installation {
    let mut args = vec![
        "template",
        "trainctl-operator",
        "deploy/helm/trainctl-operator",
        "--namespace",
        NAMESPACE,
    ];
    for value in values {
        args.extend(["--set", value]);
    }
    Installation::from_yaml("helm template", &run_tool("helm", &args))
}

#[test]
#[ignore = "needs helm; .ci/run runs it when helm is installed"]
fn helm_renders_the_operator_of_the_plain_manifests() {
    let chart = helm_template(&[]);
    let plain = manifests();
    let rules = |installation: &Installation| json(&installation.cluster_role_rules());
    assert_eq!(
        rules(&chart),
        rules(&plain),
        "the chart's ClusterRole and the manifests' differ"
    );
    let role = |installation: &Installation| {
        serde_json::to_value(&only(&installation.roles, "Role").rules).expect("serializes")
    };
    assert_eq!(role(&chart), role(&plain));
    assert_eq!(chart.cluster_role_bindings.len(), 1);
    let container = chart.container();
    let compared = |container: &Container| {
        json!([
            container.security_context,
            container.ports,
            container.liveness_probe,
            container.readiness_probe,
            container.env,
            container.resources
        ])
    };
    assert_eq!(compared(container), compared(plain.container()));
    assert_eq!(
        container.image.as_deref(),
        plain.container().image.as_deref()
    );
    let args = container.args.clone().unwrap_or_default();
    assert_eq!(
        args,
        [
            "--leader-elect",
            "--leader-election-id=trainctl-operator",
            "--kube-api-qps=500",
            "--kube-api-burst=2000",
            "--kube-api-max-in-flight=64",
            "--controller-threads=16",
            "--metrics-bind-address=:8080",
            "--health-probe-bind-address=:8081",
            "--log-format=json",
        ]
    );
    assert_operator_accepts("helm template", &args);
}

#[test]
#[ignore = "needs helm; .ci/run runs it when helm is installed"]
fn helm_narrows_rbac_to_the_chosen_namespaces_kinds_and_gang_scheduler() {
    let chart = helm_template(&[
        "namespaces={ml,research}",
        "enabledSchemes={TFJob,pytorchjobs}",
        "gangSchedulerName=volcano",
        "clusterDomain=cluster.local",
        "leaderElect=false",
    ]);
    assert!(chart.cluster_role_bindings.is_empty());
    let namespaces: Vec<Option<&str>> = chart
        .role_bindings
        .iter()
        .map(|binding| binding.metadata.namespace.as_deref())
        .collect();
    assert_eq!(namespaces, [Some("ml"), Some("research")]);
    assert!(chart.roles.is_empty(), "no Lease without leader election");
    let rules = chart.cluster_role_rules();
    assert!(allows(rules, "kubeflow.org", "tfjobs", "watch", None));
    assert!(allows(
        rules,
        "kubeflow.org",
        "pytorchjobs/status",
        "patch",
        None
    ));
    assert!(!allows(rules, "kubeflow.org", "mpijobs", "watch", None));
    assert!(
        !allows(rules, "", "pods/exec", "create", None),
        "no MPIJob, no exec"
    );
    assert!(!allows(rules, "", "pods", "get", None));
    assert!(allows(
        rules,
        "scheduling.volcano.sh",
        "podgroups",
        "patch",
        Some("mnist")
    ));
    assert!(!allows(
        rules,
        "scheduling.x-k8s.io",
        "podgroups",
        "patch",
        Some("mnist")
    ));
    let args = chart.container().args.clone().unwrap_or_default();
    assert_eq!(
        args,
        [
            "--enable-scheme=TFJob",
            "--enable-scheme=pytorchjobs",
            "--namespace=ml",
            "--namespace=research",
            "--gang-scheduler-name=volcano",
            "--cluster-domain=cluster.local",
            "--kube-api-qps=500",
            "--kube-api-burst=2000",
            "--kube-api-max-in-flight=64",
            "--controller-threads=16",
            "--metrics-bind-address=:8080",
            "--health-probe-bind-address=:8081",
            "--log-format=json",
        ]
    );
    assert_operator_accepts("helm template (narrowed)", &args);
}

#[test]
#[ignore = "needs kubectl; .ci/run runs it when kubectl is installed"]
fn kustomize_renders_the_crds_and_the_operator_into_kubeflow() {
    let rendered = Installation::from_yaml(
        "kubectl kustomize deploy",
        &run_tool("kubectl", &["kustomize", "deploy"]),
    );
    let committed: Vec<Value> = yaml_files(&repository().join("deploy/crds"))
        .iter()
        .flat_map(|name| {
            let source = format!("deploy/crds/{name}");
            documents(&source, &read(&repository().join(&source)))
        })
        .collect();
    let by_name = |mut crds: Vec<Value>| {
        crds.sort_by_key(|crd| crd["metadata"]["name"].to_string());
        crds
    };
    assert!(
        by_name(rendered.crds.clone()) == by_name(committed),
        "kustomize changed a CRD"
    );
    let namespaces: BTreeSet<Option<String>> = rendered
        .service_accounts
        .iter()
        .map(|object| object.metadata.namespace.clone())
        .chain(
            rendered
                .roles
                .iter()
                .map(|object| object.metadata.namespace.clone()),
        )
        .chain(
            rendered
                .role_bindings
                .iter()
                .map(|object| object.metadata.namespace.clone()),
        )
        .chain(
            rendered
                .deployments
                .iter()
                .map(|object| object.metadata.namespace.clone()),
        )
        .chain(
            rendered
                .services
                .iter()
                .map(|object| object.metadata.namespace.clone()),
        )
        .collect();
    assert_eq!(namespaces, BTreeSet::from([Some(NAMESPACE.to_owned())]));
    let plain = manifests();
    assert_eq!(
        json(&rendered.cluster_role_rules()),
        json(&plain.cluster_role_rules())
    );
}
