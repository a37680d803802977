//! `deploy/` holds together with the code (docs/deploy.md): every manifest reads as its
//! Kubernetes type field for field, the Deployment passes only arguments `trainctl operator`
//! accepts, the `ClusterRole` allows what the operator does and covers what it grants MPI
//! launchers, versions follow the workspace, and the Grafana dashboard queries the operator's
//! metrics through a data source variable.
//!
//! Rendering needs tools a machine may not have: the Helm chart (`helm template`) and the
//! kustomizations (`kubectl kustomize`) are checked by ignored tests, which `.ci/run` runs when
//! the tool is installed (they stay here, at the top of the binary, where `.ci/run` picks them
//! by name: `helm_*`, `kustomize_*`).

mod dashboard;
mod manifests;
mod rbac;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Container, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding};
use serde::Deserialize;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use trainctl_api::JobKind;
use trainctl_cli_harness::trainctl;
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

/// Asserts that `trainctl operator` accepts `args`: the image's `trainctl-operator` takes the
/// same flags (one definition, `trainctl_operator::command::OperatorArgs`). clap parses every
/// argument before `--help`, values included, so `--help` at the end exits 0 only if each one is
/// accepted.
fn assert_operator_accepts(source: &str, args: &[String]) {
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
        "autoscaling",
        "horizontalpodautoscalers",
        "patch",
        Some("mnist")
    ));
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
#[ignore = "needs helm; .ci/run runs it when helm is installed"]
fn helm_grants_autoscalers_only_with_pytorchjobs() {
    let chart = helm_template(&["enabledSchemes={TFJob,MPIJob}"]);
    let rules = chart.cluster_role_rules();
    for verb in ["create", "patch", "delete"] {
        assert!(
            !allows(rules, "autoscaling", "horizontalpodautoscalers", verb, None),
            "{verb}: no PyTorchJob, no autoscaler"
        );
    }
}

#[test]
#[ignore = "needs helm; .ci/run runs it when helm is installed"]
fn helm_grants_kubernetes_gang_scheduling_its_workloads_and_pod_groups() {
    let chart = helm_template(&["gangSchedulerName=kubernetes"]);
    let rules = chart.cluster_role_rules();
    for resource in ["podgroups", "workloads"] {
        for verb in ["get", "list", "watch", "create", "delete"] {
            assert!(
                allows(rules, "scheduling.k8s.io", resource, verb, Some("mnist")),
                "{verb} {resource}"
            );
        }
        assert!(
            !allows(rules, "scheduling.k8s.io", resource, "patch", Some("mnist")),
            "immutable: never patched"
        );
    }
    assert!(!allows(
        rules,
        "scheduling.x-k8s.io",
        "podgroups",
        "get",
        None
    ));
    let args = chart.container().args.clone().unwrap_or_default();
    assert!(
        args.contains(&"--gang-scheduler-name=kubernetes".to_owned()),
        "{args:?}"
    );
    assert_operator_accepts("helm template (kubernetes gang)", &args);
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
