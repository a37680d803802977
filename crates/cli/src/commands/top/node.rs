//! `trainctl top node`: this machine's capacity, what the admitted jobs hold of it (their holds
//! in the state database, shared by every `trainctl run` and server), which replica holds each
//! GPU, and the jobs waiting for room.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use trainctl_api::quantity;
use trainctl_api::quota::{Quota, QuotaResource};
use trainctl_local::runner::ResourceHold;
use trainctl_local::store::{JobRecord, Store};
use trainctl_local::{CapacityOverrides, NodeCapacity};
use trainctl_server::discovery::{self, ServerAddress};

use crate::backend::local::queue;
use crate::cli::TopNodeArgs;
use crate::client::Client;
use crate::machine::capacity_overrides;
use crate::machine::priorities;
use crate::state::state_dir;
use crate::view::top::{Amounts, NodeView, QuotaLine, Waiting};

/// Prints the machine: as the state directory's server counts it when one runs (and no flag
/// says otherwise), else as detected here.
pub fn run(args: &TopNodeArgs, state: Option<&Path>) -> anyhow::Result<ExitCode> {
    let dir = state_dir(state)?;
    let overrides = capacity_overrides(&args.capacity)?;
    let capacity = match server_capacity(&dir) {
        Some(capacity) if overrides == CapacityOverrides::default() => capacity,
        _ => NodeCapacity::detect_with(&overrides),
    };
    let store = Store::open(&dir)?;
    let holds: Vec<(String, ResourceHold)> = store.live_holds()?;
    let mut holders: BTreeMap<u32, String> = BTreeMap::new();
    for (uid, hold) in &holds {
        let Some(job) = store.job_by_uid(uid)? else {
            // Deleted since the holds were read.
            continue;
        };
        let replicas = store.replicas(uid)?;
        for gpu in &hold.gpus {
            let holder = replicas
                .iter()
                .find(|replica| replica.gpus.contains(gpu))
                .map_or_else(
                    || job_path(&job),
                    |replica| format!("{} {}", job_path(&job), replica.name()),
                );
            holders.insert(*gpu, holder);
        }
    }
    let all_gpus: BTreeSet<u32> = capacity
        .gpus
        .iter()
        .chain(holders.keys())
        .copied()
        .collect();
    let view = NodeView {
        cpu_millis: Amounts {
            capacity: capacity.cpu_millis,
            held: holds.iter().map(|(_, hold)| hold.cpu_millis).sum(),
        },
        memory_bytes: Amounts {
            capacity: capacity.memory_bytes,
            held: holds.iter().fold(0_u64, |sum, (_, hold)| {
                sum.saturating_add(hold.memory_bytes)
            }),
        },
        gpu_count: Amounts {
            capacity: capacity.gpus.len() as u64,
            held: holders.len() as u64,
        },
        gpus: all_gpus
            .into_iter()
            .map(|gpu| (gpu, holders.get(&gpu).cloned()))
            .collect(),
        queue: queue(&store, &holds, Client::find(&dir).ok().as_ref())?,
        quotas: quota_lines(&dir),
    };
    io::stdout().lock().write_all(view.render().as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// The jobs waiting for room, in the server's order: higher priority class first (the
/// classes Kubernetes knows; a server's `--priority-class` ones are its own), then the oldest;
/// each with why it waits, in the words of the running `server`'s queue when one answers.
fn queue(
    store: &Store,
    holds: &[(String, ResourceHold)],
    server: Option<&Client>,
) -> anyhow::Result<Vec<Waiting>> {
    let priorities = priorities(&[])?;
    let mut waiting: Vec<JobRecord> = store
        .jobs(None, None)?
        .into_iter()
        .filter(|record| record.state() == "Pending")
        .filter(|record| holds.iter().all(|(uid, _)| *uid != record.uid))
        .collect();
    let priority = |record: &JobRecord| {
        record
            .job
            .run_policy()
            .scheduling_policy
            .as_ref()
            .and_then(|policy| policy.priority_class.as_ref())
            .and_then(|class| priorities.get(class))
            .copied()
            .unwrap_or(0)
    };
    // Stable: `jobs` lists the oldest first.
    waiting.sort_by_key(|record| Reverse(priority(record)));
    let mut queued = queue::waiting_words(server, &waiting.iter().collect::<Vec<_>>());
    Ok(waiting
        .iter()
        .map(|record| Waiting {
            job: job_path(record),
            waiting_for: queued.remove(&record.uid).unwrap_or_else(|| {
                record
                    .job
                    .status()
                    .and_then(|status| status.waiting_reason())
                    .unwrap_or("-")
                    .to_owned()
            }),
        })
        .collect())
}

/// What each namespace uses of each quota, as the running server of `dir` counts it; none when
/// no server runs (quotas are the server's).
fn quota_lines(dir: &Path) -> Vec<QuotaLine> {
    let Ok(quotas) = Client::find(dir).and_then(|client| client.quotas(None)) else {
        return Vec::new();
    };
    let mut lines = Vec::new();
    for quota in &quotas {
        let Ok(counted) = Quota::of(quota) else {
            continue;
        };
        let used = quota
            .status
            .as_ref()
            .and_then(|status| status.used.as_ref());
        for hard in counted.hard {
            let used = used
                .and_then(|used| used.get(&hard.key))
                .and_then(|amount| amount_of(hard.resource, amount))
                .unwrap_or(0);
            lines.push(QuotaLine {
                namespace: quota.metadata.namespace.clone().unwrap_or_default(),
                quota: counted.name.clone(),
                resource: hard.key,
                used: hard.resource.quantity_text(used),
                hard: hard.resource.quantity_text(hard.limit),
                left: hard.resource.quantity_text(hard.limit.saturating_sub(used)),
            });
        }
    }
    lines
}

/// A quantity of `resource` in its unit: millicores for CPU, bytes or units for the rest.
fn amount_of(resource: QuotaResource, amount: &Quantity) -> Option<u64> {
    match resource {
        QuotaResource::RequestsCpu | QuotaResource::LimitsCpu => quantity::to_millis(amount).ok(),
        _ => quantity::to_units(amount).ok(),
    }
}

/// The capacity the server of `dir` admits jobs against, when a live one published it in
/// `server.json`.
fn server_capacity(dir: &Path) -> Option<NodeCapacity> {
    let text = std::fs::read(dir.join(discovery::ADDRESS_FILE)).ok()?;
    let address: ServerAddress = serde_json::from_slice(&text).ok()?;
    let alive = Path::new("/proc").join(address.pid.to_string()).exists();
    let published = address.capacity.filter(|_| alive)?;
    Some(NodeCapacity {
        cpu_millis: published.cpu_millis,
        memory_bytes: published.memory_bytes,
        gpus: published.gpus,
    })
}

/// `tfjob/default/mnist`.
fn job_path(record: &JobRecord) -> String {
    format!(
        "{}/{}/{}",
        record.kind.singular(),
        record.namespace,
        record.name
    )
}
