//! `trainctl describe`: one job in detail, as `kubectl describe` shows an object: identity and
//! times, the spec in short, the replicas' processes (or pods), the conditions and the events.
//! The text is [`Description`](crate::view::description::Description)'s, the same on a cluster.

use std::io::Write;
use std::process::ExitCode;

use jiff::Timestamp;

use crate::backend::{Jobs, for_each_target};
use crate::cli::JobsArgs;
use crate::selection::Selection;
use crate::terminal_text::escaped;

/// Prints each job named, a blank line between two; exit 1 when one does not exist (the others
/// are printed). `describe quota NAME...` describes quotas, on this machine.
pub async fn run(
    args: &JobsArgs,
    jobs: &impl Jobs,
    out: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    if let Some(local) = jobs.local()
        && let Some(names) = super::quotas::asked(&args.words)
    {
        return super::quotas::describe(names, args.namespace.as_deref(), local);
    }
    let selection = match Selection::of(args)? {
        Ok(selection) => selection,
        Err(code) => return Ok(code),
    };
    let namespace = args
        .namespace
        .as_deref()
        .unwrap_or(jobs.default_namespace());
    let targets = selection.targets(namespace, "describe")?;
    let mut separator = "";
    for_each_target(&targets, out, async |target, out| {
        let job = jobs.job(target, "describe").await?;
        let description = jobs.describe(job).await?;
        let text = description.render(Timestamp::now());
        write!(out, "{separator}{}", escaped(&text))?;
        separator = "\n\n";
        Ok(())
    })
    .await
}
