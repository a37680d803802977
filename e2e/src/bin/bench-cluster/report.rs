//! The results: `results.json` (written after every measurement) and a markdown table per
//! workload.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context as _, Result};
use serde::Serialize;

use crate::observe::{Observed, Which};
use crate::restart::Restart;

/// Everything one run measured.
#[derive(Debug, Serialize)]
pub struct Results {
    /// When the run started (UTC).
    pub started: String,
    /// CPUs of this machine.
    pub cpus: usize,
    /// How trainctl was built (`image`: musl, `dist` profile; `dist`: glibc, `dist` profile).
    pub build: String,
    /// The trainctl binary measured.
    pub trainctl: String,
    /// The upstream binary measured.
    pub upstream: String,
    /// One entry per workload.
    pub workloads: Vec<WorkloadResults>,
}

/// The subjects measured on one workload.
#[derive(Debug, Serialize)]
pub struct WorkloadResults {
    /// `JOBSxWORKERS`, such as `100x10`.
    pub name: String,
    /// Jobs created at once.
    pub jobs: usize,
    /// Workers per job (each a Pod and a Service).
    pub workers: usize,
    /// In the order measured.
    pub subjects: Vec<Measurement>,
}

/// One subject on one workload. Times are seconds from `t0` by the driver's clock; memory in KiB.
#[derive(Debug, Default, Serialize)]
pub struct Measurement {
    /// `floor`, `trainctl`, `upstream` or `upstream-qps500`.
    pub subject: String,
    /// `ok`, `timeout` or `error: ...`.
    pub outcome: String,
    /// The subject's command line.
    pub command: Vec<String>,
    /// Its log.
    pub log: String,
    /// The floor's requests in flight.
    pub in_flight: Option<usize>,
    /// Services and pods seen.
    pub services: usize,
    /// Pods seen.
    pub pods: usize,
    /// When the first Service appeared.
    pub first_service_s: Option<f64>,
    /// When the last Service appeared.
    pub last_service_s: Option<f64>,
    /// When the first Pod appeared.
    pub first_pod_s: Option<f64>,
    /// When the last Pod appeared.
    pub last_pod_s: Option<f64>,
    /// Event objects seen in the namespace (the subject's events; the floor records none).
    pub events: usize,
    /// CPU seconds each component of the control plane used from `t0` until settled.
    pub control_plane_cpu_s: BTreeMap<String, f64>,
    /// Jobs seen `Running=True`.
    pub jobs_running: usize,
    /// When the first job was `Running`.
    pub first_running_s: Option<f64>,
    /// When every job was `Running`.
    pub running_s: Option<f64>,
    /// When the last pod was reported `Running`.
    pub last_pod_running_s: Option<f64>,
    /// The longest time a job turned `Running` after its last pod was reported `Running`
    /// (`Observed::running_lags`).
    pub running_lag_max_s: Option<f64>,
    /// The median of those times over the jobs.
    pub running_lag_median_s: Option<f64>,
    /// The longest time a job turned `Running` after its first pod was reported `Running`.
    pub running_lag_first_max_s: Option<f64>,
    /// Each job's time after its last pod, for a closer look.
    pub running_lags_s: BTreeMap<String, f64>,
    /// When the last change was watched before the quiet time (the samples come after it).
    pub settled_s: Option<f64>,
    /// The floor's own time from its first request to its last response.
    pub client_seconds: Option<f64>,
    /// `VmRSS` once idle, before `t0`.
    pub rss_idle_kib: Option<u64>,
    /// `VmRSS` once settled.
    pub rss_after_kib: Option<u64>,
    /// `VmHWM` once settled.
    pub peak_kib: Option<u64>,
    /// CPU seconds (user + system) from `t0` until settled.
    pub cpu_work_s: Option<f64>,
    /// CPU seconds from the process's start until settled.
    pub cpu_total_s: Option<f64>,
    /// The 1-minute load average at `t0` and once settled.
    pub load: String,
    /// The 1-minute load average at `t0`.
    pub load_at_t0: Option<f64>,
    /// Which run of the subject this is (from 1; `--runs`).
    pub run: usize,
    /// Watch failures during the measurement (each retried).
    pub watch_errors: Vec<String>,
    /// The restart on top of the jobs (`--restart`).
    pub restart: Option<Restart>,
}

impl Results {
    /// Results to fill.
    pub fn new(build: &str, trainctl: &Path, upstream: &Path) -> Results {
        Results {
            started: jiff::Timestamp::now().to_string(),
            cpus: std::thread::available_parallelism().map_or(0, usize::from),
            build: build.to_owned(),
            trainctl: trainctl.display().to_string(),
            upstream: upstream.display().to_string(),
            workloads: Vec::new(),
        }
    }

    /// Writes them as JSON.
    pub fn write(&self, path: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self)?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("cannot write {}", path.display()))
    }
}

impl Measurement {
    /// A measurement of `subject` that has not happened yet.
    pub fn new(subject: &str) -> Measurement {
        Measurement {
            subject: subject.to_owned(),
            outcome: "ok".to_owned(),
            ..Measurement::default()
        }
    }

    /// The times of what was watched.
    pub fn fill(&mut self, observed: &Observed) {
        let span = |times| {
            Observed::span(times).map(|(first, last)| (first.as_secs_f64(), last.as_secs_f64()))
        };
        self.services = observed.services.len();
        self.pods = observed.pods.len();
        self.events = observed.events.len();
        (self.first_service_s, self.last_service_s) = span(&observed.services).unzip();
        (self.first_pod_s, self.last_pod_s) = span(&observed.pods).unzip();
        self.jobs_running = observed.running_jobs().len();
        let running = span(&observed.running);
        self.first_running_s = running.map(|(first, _)| first);
        self.running_s = running
            .map(|(_, last)| last)
            .filter(|_| observed.done.is_some());
        self.last_pod_running_s =
            Observed::span(&observed.pods_running).map(|(_, last)| last.as_secs_f64());
        self.running_lag_first_max_s = observed
            .running_lags(Which::First)
            .into_values()
            .reduce(f64::max);
        self.running_lags_s = observed
            .running_lags(Which::Last)
            .into_iter()
            .map(|(job, lag)| (job.to_owned(), lag))
            .collect();
        self.running_lag_max_s = self.running_lags_s.values().copied().reduce(f64::max);
        self.running_lag_median_s = median(self.running_lags_s.values().copied().map(Some));
        self.settled_s = observed.settled.map(|settled| settled.as_secs_f64());
        self.watch_errors.clone_from(&observed.watch_errors);
        if observed.done.is_none() {
            "timeout".clone_into(&mut self.outcome);
        }
    }

    /// The subject's CPU milliseconds per object created (Pods and Services).
    fn cpu_ms_per_object(&self) -> Option<f64> {
        let objects = self.pods + self.services;
        (objects > 0).then_some(self.cpu_work_s? * 1000.0 / usize_f64(objects))
    }

    /// When the last Pod or Service appeared, if all did.
    fn last_object_s(&self) -> Option<f64> {
        if self.outcome != "ok" {
            return None;
        }
        Some(self.last_pod_s?.max(self.last_service_s?))
    }
}

/// One line about a measurement, for the progress on stderr.
pub fn summary(m: &Measurement) -> String {
    format!(
        "{}: {} services (last {}), {} pods (last {}, last Running {}), {} jobs Running ({}, lag {} max), {} events; RSS {} → {} MiB (peak {}); CPU {} s; kube-apiserver CPU {} s",
        m.outcome,
        m.services,
        seconds(m.last_service_s),
        m.pods,
        seconds(m.last_pod_s),
        seconds(m.last_pod_running_s),
        m.jobs_running,
        seconds(m.running_s),
        seconds(m.running_lag_max_s),
        m.events,
        mib(m.rss_idle_kib.map(kib_f64)),
        mib(m.rss_after_kib.map(kib_f64)),
        mib(m.peak_kib.map(kib_f64)),
        m.cpu_work_s.map_or("—".to_owned(), |s| format!("{s:.1}")),
        m.control_plane_cpu_s
            .get("kube-apiserver")
            .map_or("—".to_owned(), |s| format!("{s:.1}")),
    )
}

/// One line about a restart, for the progress on stderr.
pub fn restart_summary(r: &Restart) -> String {
    restart_figures(r)
        .map(|(label, value)| format!("{label}: {value}"))
        .join("; ")
}

/// A restart's figures, each with its label, as the summary and the table write them.
fn restart_figures(r: &Restart) -> [(&'static str, String); 9] {
    [
        ("new job served", seconds(r.served_s)),
        ("peak (first list), MiB", mib(r.peak_kib.map(kib_f64))),
        ("after, MiB", mib(r.rss_kib.map(kib_f64))),
        (
            "CPU s",
            r.cpu_s.map_or("—".to_owned(), |s| format!("{s:.1}")),
        ),
        ("pods replaced", r.pods_replaced.to_string()),
        ("services replaced", r.services_replaced.to_string()),
        ("extra objects", r.extra_objects.to_string()),
        ("statuses changed", r.statuses_changed.to_string()),
        ("deletions", r.deletions.to_string()),
    ]
}

/// A markdown table per workload: one row per subject, the median of its successful runs; then
/// the restarts, one row per run.
pub fn markdown(results: &Results) -> String {
    let mut out = String::new();
    for workload in &results.workloads {
        let objects = workload.jobs * workload.workers;
        let _ = writeln!(
            out,
            "\n### {}: {} TFJob(s) of {} Workers ({objects} Pods, {objects} Services); trainctl build `{}`, {} CPUs\n",
            workload.name, workload.jobs, workload.workers, results.build, results.cpus
        );
        out.push_str("| subject | last Service | last Pod | job(s) Running | Running after the last pod, max (median) | after the first, max | RSS idle → after (peak), MiB | CPU s (ms per object) | ratio to floor | load at t0 |\n");
        out.push_str("|---|---|---|---|---|---|---|---|---|---|\n");
        let mut subjects: Vec<&str> = Vec::new();
        for m in &workload.subjects {
            if !subjects.contains(&m.subject.as_str()) {
                subjects.push(&m.subject);
            }
        }
        let runs_of = |subject: &str| -> Vec<&Measurement> {
            workload
                .subjects
                .iter()
                .filter(|m| m.subject == subject)
                .collect()
        };
        let floor = median(runs_of("floor").iter().map(|m| m.last_object_s()));
        for subject in subjects {
            out.push_str(&row(&runs_of(subject), floor));
        }
        let restarts: Vec<(&Measurement, &Restart)> = workload
            .subjects
            .iter()
            .filter_map(|m| Some((m, m.restart.as_ref()?)))
            .collect();
        if let Some((_, first)) = restarts.first() {
            let labels = restart_figures(first).map(|(label, _)| label);
            let _ = writeln!(out, "\n| restart (`SIGKILL`) | {} |", labels.join(" | "));
            let _ = writeln!(out, "|---{}|", "|---".repeat(labels.len()));
            for (m, r) in restarts {
                let values = restart_figures(r).map(|(_, value)| value);
                let _ = writeln!(
                    out,
                    "| {} (run {}) | {} |",
                    m.subject,
                    m.run,
                    values.join(" | ")
                );
            }
        }
    }
    out
}

/// The table's row of one subject's runs.
fn row(runs: &[&Measurement], floor: Option<f64>) -> String {
    let ok: Vec<&Measurement> = runs.iter().copied().filter(|m| m.outcome == "ok").collect();
    let mut name = runs.first().map(|m| m.subject.clone()).unwrap_or_default();
    if let Some(n) = runs.first().and_then(|m| m.in_flight) {
        let _ = write!(name, " ({n} in flight)");
    }
    if runs.len() > 1 {
        let _ = write!(name, ", median of {}/{} runs", ok.len(), runs.len());
    }
    let figure = |value: fn(&Measurement) -> Option<f64>| median(ok.iter().map(|m| value(m)));
    let last_object = figure(Measurement::last_object_s);
    let ratio = match (last_object, floor) {
        (Some(last), Some(floor)) if floor > 0.0 => format!("{:.2}", last / floor),
        _ => match runs.iter().find(|m| m.outcome != "ok") {
            Some(failed) => failed.outcome.chars().take(60).collect(),
            None => "—".to_owned(),
        },
    };
    let (running, lag) = if name.starts_with("floor") {
        ("—".to_owned(), "— | —".to_owned())
    } else {
        (
            seconds(figure(|m| m.running_s)),
            format!(
                "{} ({}) | {}",
                seconds(figure(|m| m.running_lag_max_s)),
                seconds(figure(|m| m.running_lag_median_s)),
                seconds(figure(|m| m.running_lag_first_max_s)),
            ),
        )
    };
    let memory = |value: fn(&Measurement) -> Option<u64>| {
        mib(median(ok.iter().map(|m| value(m).map(kib_f64))))
    };
    format!(
        "| {name} | {} | {} | {running} | {lag} | {} → {} ({}) | {} ({}) | {ratio} | {} |\n",
        seconds(figure(|m| m.last_service_s)),
        seconds(figure(|m| m.last_pod_s)),
        memory(|m| m.rss_idle_kib),
        memory(|m| m.rss_after_kib),
        memory(|m| m.peak_kib),
        figure(|m| m.cpu_work_s).map_or("—".to_owned(), |s| format!("{s:.1}")),
        figure(Measurement::cpu_ms_per_object).map_or("—".to_owned(), |ms| format!("{ms:.2}")),
        figure(|m| m.load_at_t0).map_or("—".to_owned(), |s| format!("{s:.1}")),
    )
}

/// The median of the values there are (the mean of the middle two for an even count).
fn median(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let mut values: Vec<f64> = values.flatten().collect();
    values.sort_by(f64::total_cmp);
    let middle = values.len() / 2;
    match values.len() {
        0 => None,
        n if n % 2 == 1 => Some(values[middle]),
        _ => Some(f64::midpoint(values[middle - 1], values[middle])),
    }
}

/// The 1-minute load average.
pub fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|text| text.split_whitespace().next().map(str::to_owned))
        .unwrap_or_default()
}

fn seconds(value: Option<f64>) -> String {
    value.map_or("—".to_owned(), |s| format!("{s:.2} s"))
}

#[expect(
    clippy::cast_precision_loss,
    reason = "exact below 2^52 KiB, far above any process's memory"
)]
fn kib_f64(kib: u64) -> f64 {
    kib as f64
}

#[expect(clippy::cast_precision_loss, reason = "exact below 2^52 objects")]
fn usize_f64(n: usize) -> f64 {
    n as f64
}

fn mib(kib: Option<f64>) -> String {
    kib.map_or("—".to_owned(), |kib| format!("{:.1}", kib / 1024.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured(subject: &str, last_pod: f64, last_service: f64) -> Measurement {
        Measurement {
            last_pod_s: Some(last_pod),
            last_service_s: Some(last_service),
            rss_idle_kib: Some(10 * 1024),
            rss_after_kib: Some(20 * 1024),
            peak_kib: Some(30 * 1024),
            cpu_work_s: Some(1.5),
            pods: 1000,
            services: 1000,
            ..Measurement::new(subject)
        }
    }

    fn table(subjects: Vec<Measurement>) -> String {
        markdown(&Results {
            workloads: vec![WorkloadResults {
                name: "1x1000".to_owned(),
                jobs: 1,
                workers: 1000,
                subjects,
            }],
            ..Results::new("image", Path::new("t"), Path::new("u"))
        })
    }

    #[test]
    fn the_ratio_is_to_the_floors_last_object() {
        let mut timed_out = measured("upstream", 1.0, 1.0);
        timed_out.outcome = "timeout".to_owned();
        let table = table(vec![
            measured("floor", 10.0, 8.0),
            measured("trainctl", 11.0, 12.5),
            timed_out,
        ]);
        assert!(
            table.contains(
                "| floor | 8.00 s | 10.00 s | — | — | — | 10.0 → 20.0 (30.0) | 1.5 (0.75) | 1.00 | — |"
            ),
            "{table}"
        );
        assert!(
            table.contains(
                "| trainctl | 12.50 s | 11.00 s | — | — (—) | — | 10.0 → 20.0 (30.0) | 1.5 (0.75) | 1.25 | — |"
            ),
            "{table}"
        );
        assert!(table.contains("| timeout | — |"), "{table}");
    }

    #[test]
    fn several_runs_show_the_median_of_those_that_succeeded() {
        let mut failed = measured("trainctl", 1.0, 1.0);
        failed.outcome = "error: no cluster".to_owned();
        let table = table(vec![
            measured("floor", 10.0, 1.0),
            measured("floor", 20.0, 1.0),
            measured("trainctl", 30.0, 1.0),
            failed,
            measured("trainctl", 10.0, 1.0),
            measured("trainctl", 12.0, 1.0),
        ]);
        assert!(
            table.contains("| floor, median of 2/2 runs | 1.00 s | 15.00 s |"),
            "{table}"
        );
        assert!(
            table.contains("| trainctl, median of 3/4 runs | 1.00 s | 12.00 s |"),
            "{table}"
        );
        assert!(table.contains("| 0.80 | — |"), "{table}");
    }

    #[test]
    fn a_restart_has_a_row_of_its_own_and_a_line() {
        let mut restarted = measured("trainctl", 10.0, 10.0);
        restarted.run = 1;
        restarted.restart = Some(Restart {
            served_s: Some(5.9),
            peak_kib: Some(165 * 1024),
            rss_kib: Some(160 * 1024),
            cpu_s: Some(2.0),
            statuses_changed: 1,
            ..Restart::default()
        });
        let summary = restart_summary(restarted.restart.as_ref().expect("a restart"));
        let table = table(vec![measured("floor", 10.0, 1.0), restarted]);
        assert!(
            table.contains(
                "| trainctl (run 1) | 5.90 s | 165.0 | 160.0 | 2.0 | 0 | 0 | 0 | 1 | 0 |"
            ),
            "{table}"
        );
        assert_eq!(
            summary,
            "new job served: 5.90 s; peak (first list), MiB: 165.0; after, MiB: 160.0; CPU s: 2.0; \
             pods replaced: 0; services replaced: 0; extra objects: 0; statuses changed: 1; \
             deletions: 0"
        );
    }

    #[test]
    fn the_median_of_nothing_is_none() {
        assert_eq!(median([None, Some(3.0), Some(1.0)].into_iter()), Some(2.0));
        assert_eq!(median([None].into_iter()), None);
    }
}
