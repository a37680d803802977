//! The operator's speed and memory on a real API server (issue 26): the driver behind
//! `scripts/bench-cluster`, which builds what it needs and says how to run it.
//!
//! For each workload (`JOBSxWORKERS` TFJobs created at once; by default one of 1,000 Workers and
//! 100 of 10) and each subject, one after the other on a fresh control plane of `scripts/cluster` (so that every
//! measurement starts from the same state):
//!
//! - **floor**: no operator. The jobs are created first, then `bench-floor` (our own plain client)
//!   renders their Pods and Services with the engine and creates them, as many requests in flight
//!   as trainctl has for the workload, with no rate limit. Its clock starts at its first request.
//! - **trainctl**: `trainctl operator` with its defaults, the admin's kubeconfig, no leader
//!   election, no metrics or probe endpoints (`--trainctl-args` adds flags).
//! - **upstream**: the Kubeflow training operator v1.9.4 with its defaults (20 QPS, burst 30, one
//!   worker per controller); **upstream-qps500**: the same at trainctl's rate (`--kube-api-qps
//!   500 --kube-api-burst 2000`). Out of a cluster it needs a namespace `kubeflow`
//!   (`MY_POD_NAMESPACE`), an empty Secret for its certificate rotator, and serving certificates
//!   in `/tmp/k8s-webhook-server/serving-certs` (the script makes them); no webhook is
//!   registered with the API server, so its webhooks are never called.
//!
//! An operator is started, its log waited on until its controllers run, and left idle for
//! `--idle-seconds` (its idle memory is read then). The driver watches the namespace's Pods,
//! Services, Events (metadata only) and TFJobs, records `t0` and creates the jobs at once; by its
//! own clock it records when the last Service and the last Pod appear and when every job has the
//! condition `Running=True`, and, from the pods' phases, how long after its first pod was
//! reported `Running` each job turned `Running`. Once all that happened and nothing was watched for
//! `--settle-seconds`, it reads the process's resident memory (`VmRSS`), its peak (`VmHWM`) and the
//! CPU time it used since `t0` (utime + stime), stops it and takes the control plane down. With
//! `--restart`, an operator is killed and started again on top of its jobs first (restart.rs).

mod cluster;
mod observe;
mod process;
mod report;
mod restart;
mod workload;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use clap::{Parser, ValueEnum};
use futures_util::StreamExt as _;
use futures_util::stream;
use kube::Client;
use kube::api::{Api, DynamicObject, PostParams};
use serde::Serialize;
use trainctl_api::JobKind;
use trainctl_operator::job;
use trainctl_operator::rate_limit::RateLimits;

use crate::observe::{Expected, Watches};
use crate::process::{Process, Sample};
use crate::report::{Measurement, Results, WorkloadResults};
use crate::workload::{NAMESPACE, Workload, tfjob};

/// Measures the floor, trainctl and upstream on fresh control planes of `scripts/cluster`.
#[derive(Debug, Parser)]
struct Cli {
    /// `scripts/cluster` of this checkout (`TRAINCTL_CLUSTER_DIR` says where its cluster goes).
    #[arg(long)]
    cluster_script: PathBuf,
    /// The operator binary to measure: the image's `trainctl-operator`, or `trainctl` (run as
    /// `trainctl operator`).
    #[arg(long)]
    trainctl: PathBuf,
    /// How `--trainctl` was built, for the report (`image`, `dist`, `release`).
    #[arg(long, default_value = "image")]
    build: String,
    /// The upstream operator's binary (`training-operator.v1`).
    #[arg(long)]
    upstream: PathBuf,
    /// The `bench-floor` binary.
    #[arg(long)]
    floor: PathBuf,
    /// The CRDs trainctl installs (`deploy/crds`); also the floor's.
    #[arg(long)]
    crds: PathBuf,
    /// Upstream's CRDs (`testdata/fixtures/upstream/crds`).
    #[arg(long)]
    upstream_crds: PathBuf,
    /// The subjects, in order.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "floor,trainctl,upstream,upstream-qps500"
    )]
    subjects: Vec<Subject>,
    /// Rounds of every subject, one after the other (the table shows medians).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
    /// The workloads, in order: `JOBSxWORKERS` each (default: 1x1000 and 100x10).
    #[arg(long, alias = "only", value_delimiter = ',')]
    workloads: Vec<Workload>,
    /// After each operator's measurement, kill it (`SIGKILL`), start it again and measure the
    /// restart (see restart.rs).
    #[arg(long)]
    restart: bool,
    /// Extra flags for `trainctl operator`, split at whitespace.
    #[arg(long, default_value = "", allow_hyphen_values = true)]
    trainctl_args: String,
    /// Extra flags for both upstream subjects, split at whitespace.
    #[arg(long, default_value = "", allow_hyphen_values = true)]
    upstream_args: String,
    /// The floor's requests in flight (default: trainctl's for the workload).
    #[arg(long)]
    floor_in_flight: Option<usize>,
    /// Seconds a subject may take from `t0` until its last object and every job Running.
    #[arg(long, default_value_t = 300)]
    timeout_seconds: u64,
    /// Seconds an operator is left idle after its controllers start, before its idle memory.
    #[arg(long, default_value_t = 5)]
    idle_seconds: u64,
    /// Seconds without a watched change after which a subject counts as settled.
    #[arg(long, default_value_t = 5)]
    settle_seconds: u64,
    /// Where results.json and the subjects' logs go.
    #[arg(long)]
    out: PathBuf,
}

/// What is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
enum Subject {
    /// `bench-floor`: our plain client, no operator.
    Floor,
    /// `trainctl operator`.
    Trainctl,
    /// The upstream operator with its defaults.
    Upstream,
    /// The upstream operator at trainctl's request rate.
    #[value(name = "upstream-qps500")]
    #[serde(rename = "upstream-qps500")]
    UpstreamQps500,
}

impl Subject {
    /// The name the report and the flags use.
    fn name(self) -> &'static str {
        match self {
            Subject::Floor => "floor",
            Subject::Trainctl => "trainctl",
            Subject::Upstream => "upstream",
            Subject::UpstreamQps500 => "upstream-qps500",
        }
    }

    fn is_upstream(self) -> bool {
        matches!(self, Subject::Upstream | Subject::UpstreamQps500)
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Cli::parse();
    std::fs::create_dir_all(args.out.join("logs"))
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let mut results = Results::new(&args.build, &args.trainctl, &args.upstream);
    let workloads = if args.workloads.is_empty() {
        Workload::DEFAULT.to_vec()
    } else {
        args.workloads.clone()
    };
    for workload in workloads {
        results.workloads.push(WorkloadResults {
            name: workload.to_string(),
            jobs: workload.jobs,
            workers: workload.workers,
            subjects: Vec::new(),
        });
        // Round after round of every subject, so that a change in the machine's load falls on
        // all of them alike.
        for run in 1..=args.runs as usize {
            for &subject in &args.subjects {
                eprintln!("==> {workload} / {} (run {run})", subject.name());
                let measurement = measure(&args, workload, subject, run).await;
                eprintln!("    {}", report::summary(&measurement));
                if let Some(current) = results.workloads.last_mut() {
                    current.subjects.push(measurement);
                }
                results.write(&args.out.join("results.json"))?;
            }
        }
    }
    print!("{}", report::markdown(&results));
    Ok(())
}

/// One subject on one workload, on a fresh control plane taken down afterwards.
async fn measure(args: &Cli, workload: Workload, subject: Subject, run: usize) -> Measurement {
    let mut measurement = Measurement::new(subject.name());
    measurement.run = run;
    let log = args
        .out
        .join("logs")
        .join(format!("{workload}-{}-{run}.log", subject.name()));
    measurement.log = log.display().to_string();
    let outcome = async {
        let kubeconfig = cluster::fresh(&args.cluster_script, &args.out).await?;
        let client = cluster::client(&kubeconfig).await?;
        let crds = if subject.is_upstream() {
            &args.upstream_crds
        } else {
            &args.crds
        };
        cluster::install_crds(&client, crds).await?;
        cluster::namespace(&client, NAMESPACE).await?;
        if subject == Subject::Floor {
            floor(args, workload, &client, &kubeconfig, &log, &mut measurement).await
        } else {
            let command = operator_command(args, subject, &client, &kubeconfig).await?;
            operator(
                args,
                workload,
                subject,
                &client,
                command,
                &log,
                &mut measurement,
            )
            .await
        }
    }
    .await;
    if let Err(error) = outcome {
        measurement.outcome = format!("error: {error:#}");
    }
    if let Err(error) = cluster::down(&args.cluster_script, &args.out).await {
        eprintln!("    warning: {error:#}");
    }
    measurement
}

/// The command line (and environment) of an operator subject; prepares upstream's namespace.
async fn operator_command(
    args: &Cli,
    subject: Subject,
    client: &Client,
    kubeconfig: &Path,
) -> Result<(Vec<String>, Vec<(String, String)>)> {
    let kubeconfig = kubeconfig.display().to_string();
    let mut command: Vec<String>;
    let mut env = Vec::new();
    if subject == Subject::Trainctl {
        command = vec![args.trainctl.display().to_string()];
        if args
            .trainctl
            .file_name()
            .is_some_and(|name| name == "trainctl")
        {
            command.push("operator".to_owned());
        }
        command.extend(
            [
                "--kubeconfig",
                &kubeconfig,
                "--metrics-bind-address",
                "0",
                "--health-probe-bind-address",
                "0",
                "--log-format",
                "json",
            ]
            .map(str::to_owned),
        );
        command.extend(args.trainctl_args.split_whitespace().map(str::to_owned));
    } else {
        cluster::upstream_prerequisites(client, cluster::UPSTREAM_NAMESPACE).await?;
        let port = process::free_port()?.to_string();
        command = vec![args.upstream.display().to_string()];
        command.extend(
            [
                "--kubeconfig",
                &kubeconfig,
                "--metrics-bind-address",
                "0",
                "--health-probe-bind-address",
                "0",
                "--webhook-server-port",
                &port,
            ]
            .map(str::to_owned),
        );
        if subject == Subject::UpstreamQps500 {
            let limits = RateLimits::default();
            command.extend([
                format!("--kube-api-qps={}", limits.qps),
                format!("--kube-api-burst={}", limits.burst),
            ]);
        }
        command.extend(args.upstream_args.split_whitespace().map(str::to_owned));
        env.push((
            "MY_POD_NAMESPACE".to_owned(),
            cluster::UPSTREAM_NAMESPACE.to_owned(),
        ));
    }
    Ok((command, env))
}

/// The floor: the jobs first, then `bench-floor` creating their children from `t0`.
async fn floor(
    args: &Cli,
    workload: Workload,
    client: &Client,
    kubeconfig: &Path,
    log: &Path,
    measurement: &mut Measurement,
) -> Result<()> {
    create_jobs(client.clone(), workload).await?;
    let in_flight = args
        .floor_in_flight
        .unwrap_or_else(|| workload.trainctl_in_flight());
    measurement.in_flight = Some(in_flight);
    let command = vec![
        args.floor.display().to_string(),
        "--namespace".to_owned(),
        NAMESPACE.to_owned(),
        "--in-flight".to_owned(),
        in_flight.to_string(),
    ];
    measurement.command.clone_from(&command);
    let env = vec![("KUBECONFIG".to_owned(), kubeconfig.display().to_string())];
    let mut process = Process::spawn(&command, &env, log, true)?;
    let ready = process
        .read_line(Duration::from_secs(60))
        .await
        .context("bench-floor did not get ready")?;
    anyhow::ensure!(ready.starts_with("ready "), "bench-floor said {ready:?}");
    let mut watches = Watches::start(client, NAMESPACE).await?;
    let idle = process.sample()?;
    measurement.rss_idle_kib = Some(idle.rss_kib);
    let load = report::load();
    let control_plane = cluster::control_plane_cpu();
    let t0 = Instant::now();
    process.send_line("go").await?;
    let expected = expected(workload, false);
    let observed = watches.observe(t0, &expected, limits(args)).await;
    let after = process.sample()?;
    record(
        measurement,
        &observed,
        (&idle, &after),
        (&load, &control_plane),
    );
    process.close_stdin();
    if let Ok(done) = process.read_line(Duration::from_secs(10)).await {
        measurement.client_seconds = done.split_whitespace().nth(1).and_then(|s| s.parse().ok());
    }
    process.stop(Duration::from_secs(2)).await;
    Ok(())
}

/// An operator: started, left idle, then the jobs created at `t0`.
async fn operator(
    args: &Cli,
    workload: Workload,
    subject: Subject,
    client: &Client,
    (command, env): (Vec<String>, Vec<(String, String)>),
    log: &Path,
    measurement: &mut Measurement,
) -> Result<()> {
    measurement.command.clone_from(&command);
    let mut process = Process::spawn(&command, &env, log, false)?;
    // What each logs once its controllers run (upstream's TFJob controller starts last).
    let ready: fn(&str) -> bool = if subject == Subject::Trainctl {
        |line| line.contains("the job caches are synced")
    } else {
        |line| line.contains("Starting workers") && line.contains("tfjob-controller")
    };
    process
        .await_log(ready, Duration::from_secs(120))
        .await
        .context("the operator did not start its controllers")?;
    tokio::time::sleep(Duration::from_secs(args.idle_seconds)).await;
    let mut watches = Watches::start(client, NAMESPACE).await?;
    let idle = process.sample()?;
    measurement.rss_idle_kib = Some(idle.rss_kib);
    let load = report::load();
    let control_plane = cluster::control_plane_cpu();
    let t0 = Instant::now();
    // Created while the watches are read, so that each change is timed when it arrives.
    let creating = tokio::spawn(create_jobs(client.clone(), workload));
    let observed = watches
        .observe(t0, &expected(workload, true), limits(args))
        .await;
    let after = process.sample()?;
    record(
        measurement,
        &observed,
        (&idle, &after),
        (&load, &control_plane),
    );
    creating.await.context("creating the jobs")??;
    if args.restart {
        let again = log.with_extension("restart.log");
        let restarted = restart::measure(
            client,
            &mut watches,
            process,
            || Process::spawn(&command, &env, &again, false),
            limits(args),
        )
        .await
        .context("the restart")?;
        eprintln!("    restart: {}", report::restart_summary(&restarted));
        measurement.restart = Some(restarted);
    } else {
        process.stop(Duration::ZERO).await;
    }
    Ok(())
}

fn limits(args: &Cli) -> observe::Limits {
    observe::Limits {
        timeout: Duration::from_secs(args.timeout_seconds),
        settle: Duration::from_secs(args.settle_seconds),
    }
}

/// What a subject is done with: every object; for an operator, also every pod reported
/// `Running` and every job `Running`.
fn expected(workload: Workload, operator: bool) -> Expected {
    Expected {
        objects: workload.objects(),
        running_jobs: if operator { workload.jobs } else { 0 },
        running_pods: if operator { workload.objects() } else { 0 },
    }
}

/// Fills the measurement from what was watched and the two samples of the process.
fn record(
    measurement: &mut Measurement,
    observed: &observe::Observed,
    (idle, after): (&Sample, &Sample),
    (load_before, control_plane_before): (&str, &BTreeMap<String, f64>),
) {
    measurement.fill(observed);
    measurement.rss_after_kib = Some(after.rss_kib);
    measurement.peak_kib = Some(after.hwm_kib);
    measurement.cpu_work_s = Some(ticks(after.cpu_seconds - idle.cpu_seconds));
    measurement.cpu_total_s = Some(after.cpu_seconds);
    measurement.load = format!("{load_before} → {}", report::load());
    measurement.load_at_t0 = load_before.parse().ok();
    measurement.control_plane_cpu_s = cluster::control_plane_cpu()
        .into_iter()
        .filter_map(|(name, after)| {
            let used = ticks(after - control_plane_before.get(&name)?);
            Some((name, used))
        })
        .collect();
}

/// A difference of CPU times rounded to the clock tick they are counted in (0.01 s), without
/// the binary fractions subtraction leaves.
fn ticks(seconds: f64) -> f64 {
    (seconds * 100.0).round() / 100.0
}

/// Creates the workload's TFJobs at once (one request each, all in flight together).
async fn create_jobs(client: Client, workload: Workload) -> Result<()> {
    let api: Api<DynamicObject> =
        Api::namespaced_with(client, NAMESPACE, &job::api_resource(JobKind::TFJob));
    let manifests = workload
        .job_names()
        .into_iter()
        .map(|name| tfjob(&name, workload.workers))
        .collect::<Result<Vec<_>>>()?;
    let created: Vec<_> = stream::iter(manifests)
        .map(|manifest| {
            let api = api.clone();
            async move { api.create(&PostParams::default(), &manifest).await }
        })
        .buffer_unordered(workload.jobs)
        .collect()
        .await;
    for result in created {
        result.context("creating a TFJob")?;
    }
    Ok(())
}
