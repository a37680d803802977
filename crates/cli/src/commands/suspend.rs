//! `trainctl suspend` and `trainctl resume`: set a job's `spec.runPolicy.suspend` through the
//! local control plane, or in a cluster (a merge patch, which the operator acts on).

use std::io::Write;
use std::process::ExitCode;

use crate::backend::{Jobs, for_each_target};
use crate::cli::JobsArgs;
use crate::selection::Selection;

/// Suspends (`true`: their replicas stop and their resources are given back) or resumes
/// (`false`: they are queued again) each job named; exit 1 when one does not exist (the others
/// are changed).
pub async fn run(
    args: &JobsArgs,
    suspend: bool,
    jobs: &impl Jobs,
    out: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    let (command, done) = if suspend {
        ("suspend", "suspended")
    } else {
        ("resume", "resumed")
    };
    let selection = match Selection::of(args)? {
        Ok(selection) => selection,
        Err(code) => return Ok(code),
    };
    let namespace = args
        .namespace
        .as_deref()
        .unwrap_or(jobs.default_namespace());
    let targets = selection.targets(namespace, command)?;
    for_each_target(&targets, out, async |target, out| {
        let resource = jobs.set_suspended(target, suspend).await?;
        writeln!(out, "{resource} {done}")?;
        Ok(())
    })
    .await
}
