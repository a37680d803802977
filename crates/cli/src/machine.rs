//! The machine's settings from the command line, shared by `run` and `server`: capacity
//! overrides, restart back-off, node name, who is told when a job finishes.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, bail};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use trainctl_api::quantity;
use trainctl_engine::reconcile::RestartBackoff;
use trainctl_local::process::HelperCommand;
use trainctl_local::runner::{RunSettings, Supervision};
use trainctl_local::{CapacityOverrides, NodeCapacity};

use crate::cli::{CapacityArgs, MachineArgs};

/// The runner's settings: how replicas are supervised, this machine's capacity (detected, with
/// the flags' overrides), the restart back-off, the notifications.
pub fn settings(args: &MachineArgs, supervision: Supervision) -> anyhow::Result<RunSettings> {
    Ok(RunSettings {
        supervision,
        capacity: NodeCapacity::detect_with(&capacity_overrides(&args.capacity)?),
        backoff: RestartBackoff {
            initial: args.restart_backoff,
            max: args.restart_backoff_max.max(args.restart_backoff),
        },
        node_name: node_name(),
        admission_poll: Duration::from_secs(1),
        log_limit: args.logs.limit(),
        notify: args.notify.settings(),
        volumes: !args.volumes.no_volumes,
    })
}

/// How to start the watchdog of `trainctl run`'s replicas: this binary's `__watchdog`.
pub fn watchdog() -> HelperCommand {
    this_binary("__watchdog")
}

/// A server's replicas: they outlive it, started by this binary's `__shim`.
pub fn detached() -> Supervision {
    Supervision::Detached {
        shim: this_binary("__shim"),
    }
}

/// A hidden subcommand of this binary.
fn this_binary(subcommand: &str) -> HelperCommand {
    HelperCommand {
        program: "/proc/self/exe".into(),
        args: vec![subcommand.into()],
    }
}

/// The capacity the flags (or their environment variables) say, in place of what is detected.
pub fn capacity_overrides(args: &CapacityArgs) -> anyhow::Result<CapacityOverrides> {
    type Read = fn(&Quantity) -> Result<u64, quantity::InvalidQuantity>;
    let amount = |flag: &str, text: &Option<String>, read: Read| {
        text.as_ref()
            .map(|text| {
                read(&Quantity(text.clone()))
                    .with_context(|| format!("{flag} {text}: expected a quantity"))
            })
            .transpose()
    };
    let overrides = CapacityOverrides {
        cpu_millis: amount("--cpus", &args.cpus, quantity::to_millis)?,
        memory_bytes: amount("--memory", &args.memory, quantity::to_units)?,
        gpus: args.gpus,
    };
    if overrides.cpu_millis == Some(0) {
        bail!("--cpus 0: a machine without CPUs can run nothing");
    }
    Ok(overrides)
}

/// This machine's name, as `spec.nodeName` reports it.
pub fn node_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_owned())
        .ok()
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "localhost".to_owned())
}

/// Priorities of `schedulingPolicy.priorityClass` names: Kubernetes' two system classes, then
/// each `NAME=VALUE` given.
pub fn priorities(given: &[String]) -> anyhow::Result<BTreeMap<String, i32>> {
    let mut priorities = BTreeMap::from([
        ("system-node-critical".to_owned(), 2_000_001_000),
        ("system-cluster-critical".to_owned(), 2_000_000_000),
    ]);
    for pair in given {
        let (name, value) = pair
            .split_once('=')
            .with_context(|| format!("--priority-class {pair}: expected NAME=VALUE"))?;
        let value: i32 = value
            .parse()
            .with_context(|| format!("--priority-class {pair}: the value is not an integer"))?;
        priorities.insert(name.to_owned(), value);
    }
    Ok(priorities)
}
