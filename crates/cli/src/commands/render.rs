//! `trainctl render`: the objects the operator creates for a job, as a v1 `List`.

use std::process::ExitCode;

use anyhow::Context;
use serde_json::{Value, json};
use trainctl_api::manifest::Manifests;
use trainctl_engine::addressing::Addressing;
use trainctl_engine::objects::{BuildOptions, JobObjects, build_objects};

use crate::cli::RenderArgs;
use crate::diagnostics::{self, EXIT_INVALID};
use crate::output;

/// Loads the jobs and prints every PodGroup, ConfigMap, Service and Pod they create.
pub fn run(args: &RenderArgs) -> anyhow::Result<ExitCode> {
    let mut manifests = Manifests::load_files(&args.files);
    if let Err(code) = diagnostics::report(&manifests) {
        return Ok(code);
    }
    if let Some(namespace) = &args.namespace {
        for loaded in &mut manifests.jobs {
            let metadata = loaded.job.metadata_mut();
            match metadata.namespace.as_deref() {
                Some(own) if own != namespace => {
                    eprintln!(
                        "{}: the job's namespace `{own}` does not match --namespace `{namespace}`",
                        loaded.source
                    );
                    return Ok(ExitCode::from(EXIT_INVALID));
                }
                _ => metadata.namespace = Some(namespace.clone()),
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
    let mut items: Vec<Value> = Vec::new();
    for loaded in &manifests.jobs {
        let objects = build_objects(&loaded.job, &options);
        list_items(&objects, &mut items).context("cannot serialize the objects")?;
    }
    let list = json!({
        "apiVersion": "v1",
        "kind": "List",
        "metadata": { "resourceVersion": "" },
        "items": items,
    });
    print!("{}", output::render(&list, args.output)?);
    Ok(ExitCode::SUCCESS)
}

/// Appends a job's objects in creation order: PodGroup, RBAC and ConfigMaps (MPI), Services,
/// Pods.
fn list_items(objects: &JobObjects, items: &mut Vec<Value>) -> serde_json::Result<()> {
    if let Some(pod_group) = &objects.pod_group {
        items.push(serde_json::to_value(pod_group)?);
    }
    append(items, &objects.service_accounts)?;
    append(items, &objects.roles)?;
    append(items, &objects.role_bindings)?;
    append(items, &objects.config_maps)?;
    append(items, &objects.services)?;
    append(items, &objects.pods)
}

fn append<T: serde::Serialize>(items: &mut Vec<Value>, objects: &[T]) -> serde_json::Result<()> {
    for object in objects {
        items.push(serde_json::to_value(object)?);
    }
    Ok(())
}
