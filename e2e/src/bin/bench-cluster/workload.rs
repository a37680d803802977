//! The workloads: `JOBSxWORKERS` TFJobs created at once, each of Workers only (TFJob defaults
//! otherwise; kwok runs their pods until they are deleted).

use std::fmt;
use std::str::FromStr;

use anyhow::Result;
use kube::api::DynamicObject;
use serde_json::json;
use trainctl_operator::PARALLELISM;
use trainctl_operator::rate_limit::RateLimits;

/// The namespace the jobs go to.
pub const NAMESPACE: &str = "bench";

/// `jobs` TFJobs of `workers` Workers each (a Pod and a Service per Worker), created at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Workload {
    /// TFJobs created at once.
    pub jobs: usize,
    /// Workers per job.
    pub workers: usize,
}

impl Workload {
    /// The workloads measured when none is named: one job of 1,000 Workers, 100 of 10.
    pub const DEFAULT: [Workload; 2] = [
        Workload {
            jobs: 1,
            workers: 1000,
        },
        Workload {
            jobs: 100,
            workers: 10,
        },
    ];

    /// Pods, and as many Services.
    pub fn objects(self) -> usize {
        self.jobs * self.workers
    }

    /// The jobs' names: `big` for a lone job, else `job-000`, `job-001`...
    pub fn job_names(self) -> Vec<String> {
        if self.jobs == 1 {
            return vec!["big".to_owned()];
        }
        (0..self.jobs).map(|i| format!("job-{i:03}")).collect()
    }

    /// trainctl's creations in flight for this workload: each job's `PARALLELISM`, several jobs
    /// reconciled at once (16 controller threads), all bounded by the creations the client has
    /// in flight.
    pub fn trainctl_in_flight(self) -> usize {
        (PARALLELISM * self.jobs).min(RateLimits::default().children_in_flight())
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", self.jobs, self.workers)
    }
}

impl FromStr for Workload {
    type Err = String;

    fn from_str(text: &str) -> Result<Workload, String> {
        let expected = || format!("'{text}': expected JOBSxWORKERS, such as 100x10");
        let (jobs, workers) = text.split_once('x').ok_or_else(expected)?;
        let count = |part: &str| part.parse::<usize>().ok().filter(|n| *n > 0);
        match (count(jobs), count(workers)) {
            (Some(jobs), Some(workers)) => Ok(Workload { jobs, workers }),
            _ => Err(expected()),
        }
    }
}

/// A TFJob of `workers` Workers only, the TFJob defaults otherwise (kwok runs them for ever).
pub fn tfjob(name: &str, workers: usize) -> Result<DynamicObject> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"tfReplicaSpecs": {"Worker": {
            "replicas": workers,
            "template": {"spec": {"containers": [{
                "name": "tensorflow",
                "image": "tensorflow/tensorflow:2.15.0",
                "command": ["python", "/opt/train.py"],
            }]}},
        }}},
    }))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workload_is_jobs_by_workers() {
        let workload: Workload = "100x100".parse().expect("a workload");
        assert_eq!(
            workload,
            Workload {
                jobs: 100,
                workers: 100
            }
        );
        assert_eq!(workload.objects(), 10_000);
        assert_eq!(workload.to_string(), "100x100");
        assert_eq!(workload.job_names()[99], "job-099");
        for wrong in ["100", "0x10", "10x", "ax10", "10x-1"] {
            assert!(wrong.parse::<Workload>().is_err(), "{wrong}");
        }
    }

    #[test]
    fn the_default_workloads_have_a_thousand_workers() {
        for workload in Workload::DEFAULT {
            assert_eq!(workload.objects(), 1000);
            assert_eq!(workload.job_names().len(), workload.jobs);
        }
        assert_eq!(Workload::DEFAULT[0].job_names(), ["big"]);
    }

    #[test]
    fn the_floor_has_as_many_requests_in_flight_as_trainctl() {
        assert_eq!(Workload::DEFAULT[0].trainctl_in_flight(), PARALLELISM);
        assert_eq!(Workload::DEFAULT[1].trainctl_in_flight(), 56);
    }
}
