//! The `ClusterRole`: every job kind with its status and finalizers, every object the operator
//! creates, and every permission it grants an MPI launcher.

use super::*;

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

/// An elastic PyTorchJob autoscaled by its CPU: its HorizontalPodAutoscaler besides pods and
/// services.
const AUTOSCALED_PYTORCH_JOB: &str = "\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: elastic, namespace: ml}
spec:
  elasticPolicy:
    minReplicas: 1
    maxReplicas: 3
    metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}}]
  pytorchReplicaSpecs:
    Worker: {replicas: 2, template: {spec: {containers: [{name: pytorch, image: p}]}}}
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
    created.extend(
        objects
            .hpa
            .iter()
            .map(|object| named("horizontalpodautoscalers", object)),
    );
    created
}

#[test]
fn the_cluster_role_allows_creating_every_object_the_operator_makes() {
    let installation = manifests();
    let rules = installation.cluster_role_rules();
    let mut plurals = BTreeSet::new();
    for manifest in [MPI_JOB, TF_JOB, AUTOSCALED_PYTORCH_JOB] {
        for (api_version, plural, name) in created_objects(manifest) {
            let group = group_of(&api_version);
            // Pods, services and the launcher's service account are created with a plain create;
            // the launcher's ConfigMap, Role and RoleBinding and the HorizontalPodAutoscaler by
            // server-side apply, which is authorized as create and as patch; the HPA is deleted
            // while its job is suspended.
            let verbs: &[&str] = match plural {
                "pods" | "services" | "serviceaccounts" => &["create"],
                "horizontalpodautoscalers" => &["create", "patch", "delete"],
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
            "horizontalpodautoscalers",
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
