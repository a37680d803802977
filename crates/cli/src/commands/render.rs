//! `trainctl render`: the objects the operator creates for a job, as a v1 `List`.

use std::process::ExitCode;

use k8s_openapi::api::core::v1::{ConfigMap, Pod, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use serde::Serialize;
use trainctl_api::manifest::Manifests;
use trainctl_engine::PodGroup;
use trainctl_engine::addressing::Addressing;
use trainctl_engine::objects::{BuildOptions, JobObjects, build_objects};

use crate::cli::RenderArgs;
use crate::diagnostics;
use crate::output;

/// Loads the jobs and prints every PodGroup, ConfigMap, Service and Pod they create.
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
    let objects: Vec<JobObjects> = manifests
        .jobs
        .iter()
        .map(|loaded| build_objects(&loaded.job, &options))
        .collect();
    output::print(&List::of(&objects), args.output)?;
    Ok(ExitCode::SUCCESS)
}

/// A Kubernetes `v1` `List`, as `kubectl get -o yaml` prints several objects.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct List<'a> {
    api_version: &'static str,
    kind: &'static str,
    metadata: ListMeta,
    items: Vec<Item<'a>>,
}

/// One object of the list; each serializes with its own `apiVersion` and `kind`.
#[derive(Serialize)]
#[serde(untagged)]
enum Item<'a> {
    PodGroup(&'a PodGroup),
    ServiceAccount(&'a ServiceAccount),
    Role(&'a Role),
    RoleBinding(&'a RoleBinding),
    ConfigMap(&'a ConfigMap),
    Service(&'a Service),
    Pod(&'a Pod),
}

impl<'a> List<'a> {
    /// Every job's objects in creation order: PodGroup, MPI's RBAC and ConfigMap, Services, Pods.
    fn of(jobs: &'a [JobObjects]) -> List<'a> {
        let mut items = Vec::new();
        for objects in jobs {
            items.extend(objects.pod_group.iter().map(Item::PodGroup));
            items.extend(objects.service_accounts.iter().map(Item::ServiceAccount));
            items.extend(objects.roles.iter().map(Item::Role));
            items.extend(objects.role_bindings.iter().map(Item::RoleBinding));
            items.extend(objects.config_maps.iter().map(Item::ConfigMap));
            items.extend(objects.services.iter().map(Item::Service));
            items.extend(objects.pods.iter().map(Item::Pod));
        }
        List {
            api_version: "v1",
            kind: "List",
            metadata: ListMeta {
                resource_version: Some(String::new()),
                ..ListMeta::default()
            },
            items,
        }
    }
}
