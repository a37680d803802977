//! The CLI's commands on this machine, end to end through the real binary: `run` (the job
//! rules, one test per rule), the replicas' volumes, the job commands (`get`, `describe`,
//! `logs`, `wait`, `delete`...) with kubectl's habits, containment of every process, recovery,
//! permissions, limits on input, `validate`, `render` and `crd`, and the commands that reach a
//! cluster (`--kube`, `operator`) where none answers. What they share is in the CLI's test
//! harness (`test-support/cli-harness`).

mod cluster;
mod containment;
mod crd;
mod expansion_limits;
mod input_limits;
mod jobs;
mod kubectl_habits;
mod logs_flags;
mod messages;
mod namespaces;
mod notifications;
mod open_files;
mod operator;
mod permissions;
mod recovery;
mod render;
mod repair;
mod replicas_events;
mod run;
mod tensorboard;
mod validate;
mod volumes;
mod volumes_cli;
