//! `trainctl get`: the jobs in the state directory or in a cluster, as a kubectl-like table or
//! as objects; with `-w`, again as they change.

mod print;
mod watch;

use std::io::Write;
use std::process::ExitCode;

use self::print::{Item, Printer};
use crate::backend::{Details, FoundJob, Jobs};
use crate::cli::{GetArgs, GetFormat, ReplicasArgs, ReplicasFormat, job_name};
use crate::selection::Selection;
use crate::view::jobs::JobRow;

/// Lists or shows jobs; exit 1 when a job named does not exist (the others are shown).
/// `get replicas [JOB]` lists replicas instead ([`super::replicas`]), and `get quota` quotas,
/// on this machine.
pub async fn run(
    args: &GetArgs,
    jobs: &impl Jobs,
    out: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    if let Some(replicas) = replicas_asked(args)? {
        let Some(local) = jobs.local() else {
            anyhow::bail!(
                "on a cluster, a job's replicas are its pods: kubectl get pods -l \
                 training.kubeflow.org/job-name=NAME"
            );
        };
        return super::replicas::run(&replicas, local);
    }
    if let Some(local) = jobs.local()
        && let Some(names) = super::quotas::asked(&args.words)
    {
        return super::quotas::get(names, args.namespace.as_deref(), args.all_namespaces, local);
    }
    let selection = match Selection::read(&args.words, &args.files, args.namespace.as_deref())? {
        Ok(selection) => selection,
        Err(code) => return Ok(code),
    };
    let namespace = args
        .namespace
        .as_deref()
        .unwrap_or(jobs.default_namespace());
    let printer = Printer::new(args, &selection, namespace)?;
    let scope = (!args.all_namespaces).then_some(namespace);
    let (found, code) = gather(jobs, &selection, namespace, args).await?;
    let details = gather_details(jobs, &found, &printer, scope).await?;
    let items = to_items(&found, &details)?;
    printer.print(&items, out)?;
    if args.watch {
        out.flush()?;
        let mut seen = watch::Seen::default();
        seen.remember(&items);
        loop {
            tokio::time::sleep(jobs.poll()).await;
            let (found, _) = gather(jobs, &selection, namespace, args).await?;
            let details = gather_details(jobs, &found, &printer, scope).await?;
            let items = to_items(&found, &details)?;
            seen.print_changed(&printer, &items, out)?;
            out.flush()?;
        }
    }
    Ok(code)
}

/// The arguments of `get replicas [JOB]` (also `replica`, `pods`, `pod`, `po`) when the words
/// ask for replicas, not jobs.
fn replicas_asked(args: &GetArgs) -> anyhow::Result<Option<ReplicasArgs>> {
    let Some((first, rest)) = args.words.split_first() else {
        return Ok(None);
    };
    if !super::replicas::RESOURCE_NAMES.contains(&first.as_str()) {
        return Ok(None);
    }
    let job = match rest {
        [] => None,
        [job] => Some(job.clone()),
        [kind, name] => Some(format!("{kind}/{name}")),
        _ => anyhow::bail!("`get {first}` takes one job: NAME, KIND NAME or KIND/NAME"),
    }
    .map(|text| job_name(&text).map_err(anyhow::Error::msg))
    .transpose()?;
    let output = match &args.output {
        None => None,
        Some(GetFormat::Wide) => Some(ReplicasFormat::Wide),
        Some(_) => anyhow::bail!("`get {first}` prints a table: -o wide, or no -o"),
    };
    if !args.files.is_empty() || args.watch || args.show_labels || args.sort_by.is_some() {
        anyhow::bail!("`get {first}` takes -n, -A, -l and -o wide");
    }
    Ok(Some(ReplicasArgs {
        job,
        namespace: args.namespace.clone(),
        all_namespaces: args.all_namespaces,
        selector: args.selector.clone(),
        output,
    }))
}

/// The jobs `selection` names (or lists), `-l` applied; exit 1 when a job named is not found
/// (said on stderr).
async fn gather<B: Jobs>(
    jobs: &B,
    selection: &Selection,
    namespace: &str,
    args: &GetArgs,
) -> anyhow::Result<(Vec<B::Job>, ExitCode)> {
    let scope = (!args.all_namespaces).then_some(namespace);
    let mut code = ExitCode::SUCCESS;
    let mut found = if selection.jobs.is_empty() {
        jobs.list(selection.kind, scope).await?
    } else {
        let mut found = Vec::new();
        for target in selection.jobs_in(namespace) {
            let named = if args.all_namespaces {
                let mut all = jobs.list(target.kind, None).await?;
                all.retain(|job| job.name() == target.name);
                all
            } else {
                jobs.find(&target).await?
            };
            if named.is_empty() {
                eprintln!("error: {}", jobs.not_found(&target, None).await);
                code = ExitCode::FAILURE;
            }
            found.extend(named);
        }
        found
    };
    if let Some(selector) = &args.selector {
        found.retain(|job| selector.matches(&job.labels()));
    }
    Ok((found, code))
}

/// What `-o wide` adds to each job, when the printer shows it.
async fn gather_details<B: Jobs>(
    jobs: &B,
    found: &[B::Job],
    printer: &Printer,
    scope: Option<&str>,
) -> anyhow::Result<Vec<Details>> {
    if !printer.shows_restarts() {
        return Ok(Vec::new());
    }
    jobs.details(found, scope).await
}

/// The items to print of `found`, with what `-o wide` adds to each.
fn to_items<'a>(
    found: &'a [impl FoundJob],
    details: &'a [Details],
) -> anyhow::Result<Vec<Item<'a>>> {
    found
        .iter()
        .enumerate()
        .map(|(i, job)| {
            let details = details.get(i);
            Ok(Item {
                row: JobRow {
                    namespace: job.namespace(),
                    name: job.name(),
                    kind: job.kind(),
                    state: job.state(),
                    created: job.created(),
                    job: job.job(),
                    restarts: details.map(|details| details.restarts),
                    progress: details.and_then(|details| details.progress.clone()),
                    held_by: details.and_then(|details| details.held_by.as_deref()),
                    failure: details.and_then(|details| details.failure.as_deref()),
                    reason: details.and_then(|details| details.reason.as_deref()),
                },
                object: job.shown()?,
            })
        })
        .collect()
}
