//! `trainctl get`: the jobs in the state directory or in a cluster, as a kubectl-like table or
//! as objects; with `-w`, again as they change.

mod print;
mod watch;

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;

use trainctl_api::JobKind;
use trainctl_local::store::{JobRecord, Store};

use self::print::{Item, Printer};
use super::progress::Progresses;
use crate::cli::{GetArgs, GetFormat, ReplicasArgs, ReplicasFormat, job_name};
use crate::cluster::{Cluster, ClusterJob, restarts_by_job};
use crate::selection::Selection;
use crate::state::state_dir;
use crate::target::DEFAULT_NAMESPACE;
use crate::view::jobs::JobRow;

/// Lists or shows jobs; exit 1 when a job named does not exist (the others are shown).
/// `get replicas [JOB]` lists replicas instead ([`super::replicas`]).
pub fn run(args: &GetArgs, state: Option<&Path>) -> anyhow::Result<ExitCode> {
    if let Some(replicas) = replicas_asked(args)? {
        return super::replicas::run(&replicas, state);
    }
    if let Some(names) = super::quotas::asked(&args.words) {
        return super::quotas::get(names, args.namespace.as_deref(), args.all_namespaces, state);
    }
    let selection = match Selection::read(&args.words, &args.files, args.namespace.as_deref())? {
        Ok(selection) => selection,
        Err(code) => return Ok(code),
    };
    let namespace = args.namespace.as_deref().unwrap_or(DEFAULT_NAMESPACE);
    let printer = Printer::new(args, &selection, namespace)?;
    let store = Store::open(&state_dir(state)?)?;
    let gather = || gather_local(&store, &selection, namespace, args);
    let (records, code) = gather()?;
    let mut stdout = io::stdout().lock();
    let counted = restarts(&store, &records, &printer)?;
    let mut followed = Progresses::default();
    let progressed = progresses(&store, &records, &printer, &mut followed)?;
    let items = local_items(&records, &counted, &progressed)?;
    printer.print(&items, &mut stdout)?;
    if args.watch {
        stdout.flush()?;
        let mut seen = watch::Seen::default();
        seen.remember(&items);
        loop {
            std::thread::sleep(watch::LOCAL_POLL);
            let (records, _) = gather()?;
            let counted = restarts(&store, &records, &printer)?;
            let progressed = progresses(&store, &records, &printer, &mut followed)?;
            let items = local_items(&records, &counted, &progressed)?;
            seen.print_changed(&printer, &items, &mut stdout)?;
            stdout.flush()?;
        }
    }
    Ok(code)
}

/// Lists or shows the jobs of a cluster, as [`run`] does those of this machine.
pub async fn in_cluster(
    args: &GetArgs,
    cluster: &Cluster,
    out: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    if replicas_asked(args)?.is_some() {
        anyhow::bail!(
            "on a cluster, a job's replicas are its pods: kubectl get pods -l \
             training.kubeflow.org/job-name=NAME"
        );
    }
    let selection = match Selection::read(&args.words, &args.files, args.namespace.as_deref())? {
        Ok(selection) => selection,
        Err(code) => return Ok(code),
    };
    let namespace = args.namespace.as_deref().unwrap_or(&cluster.namespace);
    let printer = Printer::new(args, &selection, namespace)?;
    let (jobs, code) = gather_in_cluster(cluster, &selection, namespace, args).await?;
    let restarts = cluster_restarts(cluster, &jobs, &printer, args, namespace).await?;
    let held = cluster_holds(cluster, &jobs, &printer, args, namespace).await;
    let items = cluster_items(&jobs, &restarts, &held)?;
    printer.print(&items, out)?;
    if args.watch {
        out.flush()?;
        let mut seen = watch::Seen::default();
        seen.remember(&items);
        loop {
            tokio::time::sleep(watch::CLUSTER_POLL).await;
            let (jobs, _) = gather_in_cluster(cluster, &selection, namespace, args).await?;
            let restarts = cluster_restarts(cluster, &jobs, &printer, args, namespace).await?;
            let held = cluster_holds(cluster, &jobs, &printer, args, namespace).await;
            let items = cluster_items(&jobs, &restarts, &held)?;
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

/// The records `selection` names (or lists), `-l` applied; exit 1 when a job named is not
/// found (said on stderr).
fn gather_local(
    store: &Store,
    selection: &Selection,
    namespace: &str,
    args: &GetArgs,
) -> anyhow::Result<(Vec<JobRecord>, ExitCode)> {
    let scope = (!args.all_namespaces).then_some(namespace);
    let mut code = ExitCode::SUCCESS;
    let mut records = if selection.jobs.is_empty() {
        store.jobs(scope, selection.kind)?
    } else {
        let mut found = Vec::new();
        for target in selection.jobs_in(namespace) {
            let named = if args.all_namespaces {
                let mut all = store.jobs(None, target.kind)?;
                all.retain(|record| record.name == target.name);
                all
            } else {
                store.job(target.namespace, target.kind, target.name)?
            };
            if named.is_empty() {
                eprintln!("error: {}", target.not_found_in(store, None)?);
                code = ExitCode::FAILURE;
            }
            found.extend(named);
        }
        found
    };
    if let Some(selector) = &args.selector {
        records.retain(|record| selector.matches(&labels(record.job.metadata())));
    }
    Ok((records, code))
}

/// The jobs of the cluster `selection` names (or lists), `-l` applied, as [`gather_local`].
async fn gather_in_cluster(
    cluster: &Cluster,
    selection: &Selection,
    namespace: &str,
    args: &GetArgs,
) -> anyhow::Result<(Vec<ClusterJob>, ExitCode)> {
    let scope = (!args.all_namespaces).then_some(namespace);
    let mut code = ExitCode::SUCCESS;
    let mut jobs = if selection.jobs.is_empty() {
        let listed = cluster.list_jobs(selection.kind, scope).await?;
        for unreadable in &listed.unreadable {
            eprintln!("warning: {unreadable}");
        }
        listed.jobs
    } else {
        let mut found = Vec::new();
        for target in selection.jobs_in(namespace) {
            let named = if args.all_namespaces {
                let mut all = cluster.list_jobs(target.kind, None).await?.jobs;
                all.retain(|job| job.name() == target.name);
                all
            } else {
                cluster.find_jobs(&target).await?
            };
            if named.is_empty() {
                eprintln!("error: {}", cluster.not_found(&target, None).await);
                code = ExitCode::FAILURE;
            }
            found.extend(named);
        }
        found
    };
    if let Some(selector) = &args.selector {
        jobs.retain(|job| selector.matches(&labels(job.job.metadata())));
    }
    Ok((jobs, code))
}

/// A job's labels, for `-l`.
fn labels(
    metadata: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> std::collections::BTreeMap<String, String> {
    metadata.labels.clone().unwrap_or_default()
}

/// The items to print of this machine's `records`.
fn local_items<'a>(
    records: &'a [JobRecord],
    restarts: &[i64],
    progresses: &[Option<String>],
) -> anyhow::Result<Vec<Item<'a>>> {
    records
        .iter()
        .enumerate()
        .map(|(i, record)| {
            Item::new(
                JobRow {
                    namespace: &record.namespace,
                    name: &record.name,
                    kind: record.kind,
                    state: record.state(),
                    created: Some(record.created_at),
                    job: &record.job,
                    restarts: restarts.get(i).copied(),
                    progress: progresses.get(i).cloned().flatten(),
                    held_by: None,
                },
                &record.job,
            )
        })
        .collect()
}

/// The items to print of the cluster's `jobs`.
fn cluster_items<'a>(
    jobs: &'a [ClusterJob],
    restarts: &HashMap<&str, i64>,
    held: &'a HashMap<String, String>,
) -> anyhow::Result<Vec<Item<'a>>> {
    jobs.iter()
        .map(|job| {
            Item::new(
                JobRow {
                    namespace: job.namespace(),
                    name: job.name(),
                    kind: job.kind,
                    state: job.state(),
                    created: job.created(),
                    job: &job.job,
                    restarts: restarts.get(job.uid()).copied(),
                    progress: None,
                    held_by: held.get(job.uid()).map(String::as_str),
                },
                &job.shown(),
            )
        })
        .collect()
}

/// Each record's restarts, every restart of every replica, in place or by re-creation, when
/// the printer shows them.
fn restarts(store: &Store, records: &[JobRecord], printer: &Printer) -> anyhow::Result<Vec<i64>> {
    if !printer.shows_restarts() {
        return Ok(Vec::new());
    }
    records
        .iter()
        .map(|record| {
            let replicas = store.replicas(&record.uid)?;
            Ok(replicas.iter().map(|r| i64::from(r.restarts)).sum())
        })
        .collect()
}

/// Each record's training progress, from its event files, when the printer shows it (`-o wide`,
/// with the restarts); `followed` keeps what was read for the next time (`-w`).
fn progresses(
    store: &Store,
    records: &[JobRecord],
    printer: &Printer,
    followed: &mut Progresses,
) -> anyhow::Result<Vec<Option<String>>> {
    if !printer.shows_restarts() {
        return Ok(Vec::new());
    }
    records
        .iter()
        .map(|record| {
            let progress = followed.of(store, record)?;
            Ok(progress.as_ref().map(crate::view::progress::short))
        })
        .collect()
}

/// Each cluster job's restarts, from its pods, when the printer shows them.
async fn cluster_restarts<'a>(
    cluster: &Cluster,
    jobs: &'a [ClusterJob],
    printer: &Printer,
    args: &GetArgs,
    namespace: &str,
) -> anyhow::Result<HashMap<&'a str, i64>> {
    if !printer.shows_restarts() || jobs.is_empty() {
        return Ok(HashMap::new());
    }
    let scope = (!args.all_namespaces).then_some(namespace);
    let pods = cluster.training_pods(scope).await?;
    Ok(restarts_by_job(jobs, &pods))
}

/// Why Kueue holds back each cluster job it has not admitted, by uid, when the printer shows
/// reasons (`-o wide`).
async fn cluster_holds(
    cluster: &Cluster,
    jobs: &[ClusterJob],
    printer: &Printer,
    args: &GetArgs,
    namespace: &str,
) -> HashMap<String, String> {
    if !printer.shows_restarts() {
        return HashMap::new();
    }
    let scope = (!args.all_namespaces).then_some(namespace);
    cluster.queue_reasons(jobs, scope).await
}

/// Whether every job in `kinds` is of one kind that the user named, so that NAME needs no kind.
fn one_named_kind(selection: &Selection) -> Option<JobKind> {
    if selection.jobs.is_empty() {
        return selection.kind;
    }
    let mut kinds = selection.jobs.iter().map(|job| job.kind.or(selection.kind));
    let first = kinds.next().flatten()?;
    kinds.all(|kind| kind == Some(first)).then_some(first)
}
