//! `trainctl render`: the objects the operator creates for a job, as a v1 `List`.

use std::process::ExitCode;

use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use serde::Serialize;
use serde::ser::{SerializeSeq as _, Serializer};
use trainctl_api::TrainingJob;
use trainctl_api::manifest::Manifests;
use trainctl_engine::PodGroup;
use trainctl_engine::addressing::Addressing;
use trainctl_engine::objects::workload::Workload;
use trainctl_engine::objects::{BuildOptions, build_objects_but_pods, build_pods};

use crate::cli::RenderArgs;
use crate::diagnostics;
use crate::output;

/// Loads the jobs and prints every PodGroup, HorizontalPodAutoscaler, ConfigMap, Service and Pod
/// they create.
pub fn run(args: &RenderArgs) -> anyhow::Result<ExitCode> {
    let mut manifests = Manifests::load_files(&args.files);
    if let Err(code) = diagnostics::report(&manifests) {
        return Ok(code);
    }
    if let Some(namespace) = &args.namespace {
        for loaded in &mut manifests.jobs {
            if let Err(code) = diagnostics::set_namespace(loaded, namespace) {
                return Ok(code);
            }
        }
    }
    let options = BuildOptions {
        addressing: Addressing::Cluster {
            cluster_domain: args.cluster_domain.clone().filter(|d| !d.is_empty()),
        },
        gang_scheduler: args.gang_scheduler.clone().filter(|s| !s.is_empty()),
        ..BuildOptions::default()
    };
    let jobs: Vec<&TrainingJob> = manifests.jobs.iter().map(|loaded| &loaded.job).collect();
    output::print(&List::of(&jobs, &options), args.output)?;
    Ok(ExitCode::SUCCESS)
}

/// A Kubernetes `v1` `List`, as `kubectl get -o yaml` prints several objects. Its items are
/// built as they are written, so that a job of 10,000 TensorFlow replicas (gigabytes of pods,
/// each naming every replica) is printed in flat memory.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct List<'a> {
    api_version: &'static str,
    kind: &'static str,
    metadata: ListMeta,
    items: Items<'a>,
}

/// Every job's objects in creation order: Workload, PodGroup, HorizontalPodAutoscaler, MPI's RBAC
/// and ConfigMap, Services, Pods.
struct Items<'a> {
    jobs: &'a [&'a TrainingJob],
    options: &'a BuildOptions,
}

/// One object of the list; each serializes with its own `apiVersion` and `kind`. Boxed: the
/// objects' sizes differ a lot, and each is written once.
#[derive(Serialize)]
#[serde(untagged)]
enum Item {
    Workload(Box<Workload>),
    PodGroup(Box<PodGroup>),
    HorizontalPodAutoscaler(Box<HorizontalPodAutoscaler>),
    ServiceAccount(Box<ServiceAccount>),
    Role(Box<Role>),
    RoleBinding(Box<RoleBinding>),
    ConfigMap(Box<ConfigMap>),
    Service(Box<Service>),
    Pod(Box<Pod>),
}

impl<'a> List<'a> {
    fn of(jobs: &'a [&'a TrainingJob], options: &'a BuildOptions) -> List<'a> {
        List {
            api_version: "v1",
            kind: "List",
            metadata: ListMeta {
                resource_version: Some(String::new()),
                ..ListMeta::default()
            },
            items: Items { jobs, options },
        }
    }
}

impl Serialize for Items<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut items = serializer.serialize_seq(None)?;
        for job in self.jobs {
            let objects = build_objects_but_pods(job, self.options);
            let others = (objects
                .workload
                .into_iter()
                .map(|o| Item::Workload(o.into())))
            .chain(
                objects
                    .pod_group
                    .into_iter()
                    .map(|o| Item::PodGroup(o.into())),
            )
            .chain(
                objects
                    .hpa
                    .into_iter()
                    .map(|o| Item::HorizontalPodAutoscaler(o.into())),
            )
            .chain(
                objects
                    .service_accounts
                    .into_iter()
                    .map(|o| Item::ServiceAccount(o.into())),
            )
            .chain(objects.roles.into_iter().map(|o| Item::Role(o.into())))
            .chain(
                objects
                    .role_bindings
                    .into_iter()
                    .map(|o| Item::RoleBinding(o.into())),
            )
            .chain(
                objects
                    .config_maps
                    .into_iter()
                    .map(|o| Item::ConfigMap(o.into())),
            )
            .chain(
                objects
                    .services
                    .into_iter()
                    .map(|o| Item::Service(o.into())),
            );
            let pods = build_pods(job, self.options).map(|pod| Item::Pod(pod.into()));
            for item in others.chain(pods) {
                items.serialize_element(&item)?;
            }
        }
        items.end()
    }
}
