//! MPI plumbing: the `<job>-config` ConfigMap (hostfile, `kubexec.sh`, `discover_hosts.sh`), the
//! launcher's RBAC for `kubectl exec`, and what launcher and worker pods mount.

use std::collections::BTreeMap;
use std::fmt::Write;

use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapVolumeSource, Container, EmptyDirVolumeSource, KeyToPath, PodSpec,
    ResourceRequirements, ServiceAccount, Volume, VolumeMount,
};
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use trainctl_api::{ReplicaSpec, ReplicaType, TrainingJob};

use super::options::BuildOptions;
use super::owner::owner_reference;
use crate::addressing::Addressing;
use crate::env::mpi::{CONFIG_MOUNT_PATH, is_gpu_launcher};
use crate::env::var;
use crate::naming::{OPERATOR_NAME_LABEL, replica_name};

/// Key of the hostfile in the ConfigMap.
pub const HOSTFILE_KEY: &str = "hostfile";
/// Key of the remote-exec script in the ConfigMap.
pub const KUBEXEC_KEY: &str = "kubexec.sh";
/// Key of the host discovery script (Horovod elastic) in the ConfigMap.
pub const DISCOVER_HOSTS_KEY: &str = "discover_hosts.sh";
/// Volume holding the ConfigMap.
pub const CONFIG_VOLUME: &str = "mpi-job-config";
/// Volume receiving `kubectl` from the `kubectl-delivery` init container.
pub const KUBECTL_VOLUME: &str = "mpi-job-kubectl";
/// Where `kubectl` is delivered.
pub const KUBECTL_MOUNT_PATH: &str = "/opt/kube";
/// Name of the init container that delivers `kubectl` to the launcher.
pub const KUBECTL_DELIVERY_CONTAINER: &str = "kubectl-delivery";

/// `r-xr-xr-x`, for the scripts.
const EXECUTABLE_MODE: i32 = 0o555;
/// `r--r--r--`, for the hostfile.
const READ_ONLY_MODE: i32 = 0o444;

/// The ConfigMap's name: `<job>-config`.
#[must_use]
pub fn config_map_name(job: &TrainingJob) -> String {
    format!("{}-config", job.name())
}

/// `slotsPerWorker`, 1 when unset.
fn slots_per_worker(job: &TrainingJob) -> i32 {
    match job {
        TrainingJob::Mpi(mpi) => mpi.spec.slots_per_worker.unwrap_or(1),
        _ => 1,
    }
}

/// The worker pods' names, by index.
fn worker_names(job: &TrainingJob) -> Vec<String> {
    let workers = job
        .replica_specs()
        .get(&ReplicaType::Worker)
        .map_or(0, ReplicaSpec::replicas_or_default);
    (0..workers)
        .map(|index| replica_name(job.name(), &ReplicaType::Worker, index))
        .collect()
}

/// The hostfile: `<worker> slots=<n>` per worker (the launcher first when it has a GPU), one per
/// line.
#[must_use]
pub fn hostfile(job: &TrainingJob) -> String {
    let slots = slots_per_worker(job);
    let mut hosts = Vec::new();
    if is_gpu_launcher(job) {
        hosts.push(replica_name(job.name(), &ReplicaType::Launcher, 0));
    }
    hosts.extend(worker_names(job));
    let mut text = String::new();
    for host in hosts {
        writeln!(text, "{host} slots={slots}").expect("writing to a String cannot fail");
    }
    text
}

/// The script `mpirun` runs instead of `ssh`: `kubexec.sh <pod> <command...>`.
///
/// On a cluster it `kubectl exec`s into the worker pod (into `mainContainer` when set). On this
/// machine every replica is local, so it runs the command right here.
#[must_use]
pub fn kubexec_script(job: &TrainingJob, addressing: &Addressing) -> String {
    let head = "#!/bin/sh\nset -x\nPOD_NAME=$1\nshift\n";
    if addressing.is_loopback() {
        return format!("{head}/bin/sh -c \"$*\"");
    }
    let container = match job {
        TrainingJob::Mpi(mpi) => mpi
            .spec
            .main_container
            .as_deref()
            .filter(|name| !name.is_empty())
            .map(|name| format!(" --container {name}"))
            .unwrap_or_default(),
        _ => String::new(),
    };
    format!("{head}{KUBECTL_MOUNT_PATH}/kubectl exec ${{POD_NAME}}{container} -- /bin/sh -c \"$*\"")
}

/// `discover_hosts.sh` (Horovod elastic): echoes `<pod>:<slots>` for each running worker, given
/// their names (upstream lists the running worker pods sorted by name).
#[must_use]
pub fn discover_hosts_script(job: &TrainingJob, running_workers: &[String]) -> String {
    let slots = slots_per_worker(job);
    let mut script = String::from("#!/bin/sh");
    if is_gpu_launcher(job) {
        // Upstream's blank line after the launcher, kept for identical output.
        let launcher = replica_name(job.name(), &ReplicaType::Launcher, 0);
        write!(script, "\necho {launcher}:{slots}\n").expect("writing to a String cannot fail");
    }
    for worker in running_workers {
        write!(script, "\necho {worker}:{slots}").expect("writing to a String cannot fail");
    }
    script
}

/// Labels of MPI's auxiliary objects (ConfigMap, service account, role, binding).
fn auxiliary_metadata(job: &TrainingJob, name: String) -> ObjectMeta {
    ObjectMeta {
        name: Some(name),
        namespace: Some(job.namespace().to_owned()),
        labels: Some(BTreeMap::from([
            ("app".to_owned(), job.name().to_owned()),
            (
                OPERATOR_NAME_LABEL.to_owned(),
                job.kind().operator_name().to_owned(),
            ),
        ])),
        owner_references: Some(vec![owner_reference(job)]),
        ..ObjectMeta::default()
    }
}

/// The `<job>-config` ConfigMap, listing every worker in `discover_hosts.sh` (the state once all
/// run; the operator refreshes it from [`discover_hosts_script`]).
#[must_use]
pub fn config_map(job: &TrainingJob, addressing: &Addressing) -> ConfigMap {
    ConfigMap {
        metadata: auxiliary_metadata(job, config_map_name(job)),
        data: Some(BTreeMap::from([
            (HOSTFILE_KEY.to_owned(), hostfile(job)),
            (KUBEXEC_KEY.to_owned(), kubexec_script(job, addressing)),
            (
                DISCOVER_HOSTS_KEY.to_owned(),
                discover_hosts_script(job, &worker_names(job)),
            ),
        ])),
        ..ConfigMap::default()
    }
}

/// The launcher's service account: the template's `serviceAccountName`, else `<job>-launcher`.
#[must_use]
pub fn launcher_service_account_name(job: &TrainingJob) -> String {
    job.replica_specs()
        .get(&ReplicaType::Launcher)
        .and_then(|spec| spec.template.spec.as_ref())
        .and_then(|pod| pod.service_account_name.clone())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| replica_name(job.name(), &ReplicaType::Launcher, 0))
}

/// The launcher's service account (create it only if absent: it may be the user's own).
#[must_use]
pub fn launcher_service_account(job: &TrainingJob) -> ServiceAccount {
    ServiceAccount {
        metadata: auxiliary_metadata(job, launcher_service_account_name(job)),
        ..ServiceAccount::default()
    }
}

/// The launcher's role: read pods, `exec` into this job's workers.
#[must_use]
pub fn launcher_role(job: &TrainingJob) -> Role {
    let workers = worker_names(job);
    let strings = |items: &[&str]| items.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    Role {
        metadata: auxiliary_metadata(job, replica_name(job.name(), &ReplicaType::Launcher, 0)),
        rules: Some(vec![
            PolicyRule {
                verbs: strings(&["get", "list", "watch"]),
                api_groups: Some(strings(&[""])),
                resources: Some(strings(&["pods"])),
                ..PolicyRule::default()
            },
            PolicyRule {
                verbs: strings(&["create"]),
                api_groups: Some(strings(&[""])),
                resources: Some(strings(&["pods/exec"])),
                resource_names: (!workers.is_empty()).then_some(workers),
                ..PolicyRule::default()
            },
        ]),
    }
}

/// Binds [`launcher_role`] to [`launcher_service_account`].
#[must_use]
pub fn launcher_role_binding(job: &TrainingJob) -> RoleBinding {
    let name = replica_name(job.name(), &ReplicaType::Launcher, 0);
    RoleBinding {
        metadata: auxiliary_metadata(job, name.clone()),
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".to_owned()),
            kind: "Role".to_owned(),
            name,
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".to_owned(),
            name: launcher_service_account_name(job),
            namespace: Some(job.namespace().to_owned()),
            ..Subject::default()
        }]),
    }
}

/// Mounts, volumes and defaults of an MPI pod: workers sleep until the launcher drives them and
/// see `kubexec.sh`; the launcher gets the whole ConfigMap, `kubectl` and its service account.
pub(crate) fn prepare_pod(
    job: &TrainingJob,
    replica_type: &ReplicaType,
    spec: &mut PodSpec,
    options: &BuildOptions,
) {
    let config_mount = mount(CONFIG_VOLUME, CONFIG_MOUNT_PATH);
    let kubexec = key_to_path(KUBEXEC_KEY, EXECUTABLE_MODE);
    match replica_type {
        ReplicaType::Launcher => {
            if spec
                .service_account_name
                .as_deref()
                .is_none_or(str::is_empty)
            {
                spec.service_account_name = Some(launcher_service_account_name(job));
            }
            // On this machine `kubexec.sh` runs commands locally: no kubectl to deliver.
            if !options.addressing.is_loopback() {
                spec.init_containers
                    .get_or_insert_with(Vec::new)
                    .push(kubectl_delivery(job, &options.mpi_kubectl_delivery_image));
            }
            if let Some(container) = spec.containers.first_mut() {
                container
                    .volume_mounts
                    .get_or_insert_with(Vec::new)
                    .extend([mount(KUBECTL_VOLUME, KUBECTL_MOUNT_PATH), config_mount]);
            }
            spec.volumes.get_or_insert_with(Vec::new).extend([
                Volume {
                    name: KUBECTL_VOLUME.to_owned(),
                    empty_dir: Some(EmptyDirVolumeSource::default()),
                    ..Volume::default()
                },
                config_volume(
                    job,
                    vec![
                        kubexec,
                        key_to_path(HOSTFILE_KEY, READ_ONLY_MODE),
                        key_to_path(DISCOVER_HOSTS_KEY, EXECUTABLE_MODE),
                    ],
                ),
            ]);
        }
        ReplicaType::Worker => {
            if let Some(container) = spec.containers.first_mut() {
                if container.command.as_ref().is_none_or(Vec::is_empty) {
                    container.command = Some(vec!["sleep".to_owned()]);
                    container.args = Some(vec!["365d".to_owned()]);
                }
                container
                    .volume_mounts
                    .get_or_insert_with(Vec::new)
                    .push(config_mount);
            }
            spec.volumes
                .get_or_insert_with(Vec::new)
                .push(config_volume(job, vec![kubexec]));
        }
        _ => {}
    }
}

fn mount(name: &str, path: &str) -> VolumeMount {
    VolumeMount {
        name: name.to_owned(),
        mount_path: path.to_owned(),
        ..VolumeMount::default()
    }
}

fn key_to_path(key: &str, mode: i32) -> KeyToPath {
    KeyToPath {
        key: key.to_owned(),
        path: key.to_owned(),
        mode: Some(mode),
        ..KeyToPath::default()
    }
}

fn config_volume(job: &TrainingJob, items: Vec<KeyToPath>) -> Volume {
    Volume {
        name: CONFIG_VOLUME.to_owned(),
        config_map: Some(ConfigMapVolumeSource {
            name: config_map_name(job),
            items: Some(items),
            ..ConfigMapVolumeSource::default()
        }),
        ..Volume::default()
    }
}

/// The init container copying `kubectl` into the launcher's `/opt/kube`.
fn kubectl_delivery(job: &TrainingJob, image: &str) -> Container {
    let resources = BTreeMap::from([
        ("cpu".to_owned(), Quantity("100m".to_owned())),
        ("ephemeral-storage".to_owned(), Quantity("5Gi".to_owned())),
        ("memory".to_owned(), Quantity("512Mi".to_owned())),
    ]);
    Container {
        name: KUBECTL_DELIVERY_CONTAINER.to_owned(),
        image: Some(image.to_owned()),
        image_pull_policy: Some("IfNotPresent".to_owned()),
        env: Some(vec![
            var("TARGET_DIR", KUBECTL_MOUNT_PATH),
            var("NAMESPACE", job.namespace()),
        ]),
        volume_mounts: Some(vec![
            mount(KUBECTL_VOLUME, KUBECTL_MOUNT_PATH),
            mount(CONFIG_VOLUME, CONFIG_MOUNT_PATH),
        ]),
        resources: Some(ResourceRequirements {
            limits: Some(resources.clone()),
            requests: Some(resources),
            ..ResourceRequirements::default()
        }),
        ..Container::default()
    }
}
