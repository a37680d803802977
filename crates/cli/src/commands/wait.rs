//! `trainctl wait`: until a job has a condition, or is gone: looking at the state database
//! again and again, or watching the job in a cluster.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use futures_util::StreamExt;
use tokio::time::Instant;
use trainctl_api::{ConditionStatus, JobConditionType, JobKind, JobStatus};

use crate::backend::{FoundJob, Jobs, for_each_target};
use crate::cli::WaitArgs;
use crate::selection::Selection;
use crate::target::Target;
use crate::wait_for::WaitFor;

/// Waits for each job named in turn, all within the timeout; exit 0 when each meets the
/// condition, 1 when one times out or never will (the others are still waited for).
pub async fn run(
    args: &WaitArgs,
    jobs: &impl Jobs,
    out: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    let deadline = Instant::now() + timeout(args)?;
    let selection = match Selection::of(&args.jobs)? {
        Ok(selection) => selection,
        Err(code) => return Ok(code),
    };
    let namespace = args
        .jobs
        .namespace
        .as_deref()
        .unwrap_or(jobs.default_namespace());
    let targets = selection.targets(namespace, "wait")?;
    for_each_target(&targets, out, async |target, out| {
        wait_for_one(target, jobs, args.wait_for, deadline, out).await
    })
    .await
}

/// Waits for the job `target` until `deadline`.
async fn wait_for_one(
    target: &Target<'_>,
    jobs: &impl Jobs,
    wait_for: WaitFor,
    deadline: Instant,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let Some(first) = jobs.find_one(target, "wait").await? else {
        if wait_for == WaitFor::Delete {
            return Ok(());
        }
        return Err(jobs.not_found(target, Some(&jobs.command("get"))).await);
    };
    let kind = first.kind();
    // The job seen first is the one followed: another job of the same name counts as its
    // deletion.
    let mut changes = std::pin::pin!(jobs.changes(&first));
    let mut job = Some(first);
    loop {
        let progress = job.as_ref().map(|job| Progress {
            status: job.job().status(),
            finished: job.finished(),
        });
        let verdict = check(progress, wait_for);
        let past = Instant::now() >= deadline;
        if let Some(end) = conclude(verdict, kind, target.name, past, out) {
            return end;
        }
        match tokio::time::timeout_at(deadline, changes.next()).await {
            // The deadline passed: the next round says so, unless the job is there.
            Err(_) => {}
            Ok(Some(change)) => job = change?,
            Ok(None) => anyhow::bail!("the watch of {}/{} ended", kind.plural(), target.name),
        }
    }
}

/// Waits until each of `made` (kind, namespace, name) has finished (`submit --wait`), printing
/// how each ended: `tfjob.kubeflow.org/mnist Succeeded`, or `... Failed: why`. Exit 0 when all
/// succeeded, 1 when one failed or was deleted meanwhile.
pub async fn until_finished(
    jobs: &impl Jobs,
    made: &[(JobKind, String, String)],
    out: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    let mut code = ExitCode::SUCCESS;
    for (kind, namespace, name) in made {
        let target = Target {
            kind: Some(*kind),
            name,
            namespace,
        };
        let resource = kind.qualified_name(name);
        let Some(first) = jobs.find_one(&target, "wait").await? else {
            writeln!(out, "{resource} deleted")?;
            code = ExitCode::FAILURE;
            continue;
        };
        let mut changes = std::pin::pin!(jobs.changes(&first));
        let mut job = Some(first);
        while job.as_ref().is_some_and(|found| !found.finished()) {
            // A watch that ends has no more to say of the job: it is gone.
            job = changes.next().await.transpose()?.flatten();
        }
        let Some(job) = job else {
            writeln!(out, "{resource} deleted")?;
            code = ExitCode::FAILURE;
            continue;
        };
        // Why it failed as `get -o wide` says it, else as its status does.
        let details = jobs
            .details(std::slice::from_ref(&job), Some(namespace))
            .await?;
        let cause = details
            .into_iter()
            .next()
            .and_then(|details| details.failure);
        let status = job.job().status();
        let failure = status
            .and_then(JobStatus::failure_message)
            .map(|message| cause.unwrap_or_else(|| message.to_owned()));
        match failure {
            Some(why) => {
                writeln!(out, "{resource} Failed: {why}")?;
                code = ExitCode::FAILURE;
            }
            None => writeln!(out, "{resource} {}", job.state())?,
        }
        out.flush()?;
    }
    Ok(code)
}

/// `--timeout` as a duration.
fn timeout(args: &WaitArgs) -> anyhow::Result<Duration> {
    Duration::try_from(args.timeout)
        .map_err(|_| anyhow::anyhow!("--timeout {}: a timeout cannot be negative", args.timeout))
}

/// What a verdict means: `Some` ends the wait (with the line of success printed on `out`);
/// `past` says whether the deadline has passed.
fn conclude(
    verdict: Verdict,
    kind: JobKind,
    name: &str,
    past: bool,
    out: &mut impl Write,
) -> Option<anyhow::Result<()>> {
    match verdict {
        Verdict::Met => Some(
            writeln!(out, "{} condition met", kind.qualified_name(name))
                .and_then(|()| out.flush())
                .map_err(Into::into),
        ),
        Verdict::Never(why) => Some(Err(anyhow::anyhow!("{}/{name} {why}", kind.plural()))),
        Verdict::NotYet if past => Some(Err(anyhow::anyhow!(
            "timed out waiting for the condition on {}/{name}",
            kind.plural()
        ))),
        Verdict::NotYet => None,
    }
}

/// A job as `wait` looks at it.
#[derive(Debug, Clone, Copy)]
struct Progress<'a> {
    /// Its status.
    status: Option<&'a JobStatus>,
    /// Whether it reached a final state.
    finished: bool,
}

/// Where a job stands with respect to what is waited for.
#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    /// It is there.
    Met,
    /// Not yet, and it may still come.
    NotYet,
    /// It will never come: the job ended otherwise, or is gone. Says why.
    Never(String),
}

/// Whether `job` (`None`: the job is gone) meets `wait_for`.
fn check(job: Option<Progress<'_>>, wait_for: WaitFor) -> Verdict {
    let (job, (type_, status)) = match (job, wait_for) {
        (None, WaitFor::Delete) => return Verdict::Met,
        (Some(_), WaitFor::Delete) => return Verdict::NotYet,
        (None, WaitFor::Condition(..)) => {
            return Verdict::Never("was deleted while waiting".to_owned());
        }
        (Some(job), WaitFor::Condition(type_, status)) => (job, (type_, status)),
    };
    let conditions = job
        .status
        .map(|status| status.conditions.as_slice())
        .unwrap_or_default();
    if conditions
        .iter()
        .any(|condition| condition.type_ == type_ && condition.status == status)
    {
        return Verdict::Met;
    }
    if !job.finished {
        return Verdict::NotYet;
    }
    // A finished job's conditions do not change any more.
    let end = conditions.iter().rev().find(|condition| {
        matches!(
            condition.type_,
            JobConditionType::Succeeded | JobConditionType::Failed
        ) && condition.status == ConditionStatus::True
    });
    let wanted = WaitFor::Condition(type_, status);
    Verdict::Never(match end {
        Some(end) if end.message.is_empty() => format!(
            "finished with condition {}, so {wanted} will never be met",
            end.type_
        ),
        Some(end) => format!(
            "finished with condition {} ({}), so {wanted} will never be met",
            end.type_, end.message
        ),
        None => format!("finished, and {wanted} will never be met"),
    })
}

#[cfg(test)]
mod tests {
    use jiff::Timestamp;
    use trainctl_api::JobCondition;
    use trainctl_api::manifest::load_str;
    use trainctl_local::store::JobRecord;

    use super::*;

    /// The record as `wait` looks at it.
    fn seen(record: &JobRecord) -> Progress<'_> {
        Progress {
            status: record.job.status(),
            finished: record.finished,
        }
    }

    fn condition(type_: JobConditionType, status: ConditionStatus, message: &str) -> JobCondition {
        JobCondition {
            type_,
            status,
            reason: format!("TFJob{type_}"),
            message: message.to_owned(),
            last_update_time: None,
            last_transition_time: None,
        }
    }

    /// A TFJob with these conditions, finished or not.
    fn job(conditions: Vec<JobCondition>, finished: bool) -> JobRecord {
        let manifest = "apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: mnist}
spec:
  tfReplicaSpecs:
    Worker:
      template:
        spec:
          containers: [{name: tensorflow, image: tf, command: [sh]}]
";
        let mut job = load_str("job.yaml", manifest).jobs.remove(0).job;
        *job.status_mut() = Some(JobStatus {
            conditions,
            ..JobStatus::default()
        });
        JobRecord {
            uid: "uid".to_owned(),
            namespace: "default".to_owned(),
            name: "mnist".to_owned(),
            kind: JobKind::TFJob,
            job,
            retired_restarts: 0,
            owner: None,
            created_at: Timestamp::UNIX_EPOCH,
            updated_at: Timestamp::UNIX_EPOCH,
            finished,
            companions: Vec::new(),
        }
    }

    const SUCCEEDED: WaitFor =
        WaitFor::Condition(JobConditionType::Succeeded, ConditionStatus::True);

    #[test]
    fn condition_that_holds_is_met() {
        let record = job(
            vec![condition(
                JobConditionType::Succeeded,
                ConditionStatus::True,
                "done",
            )],
            true,
        );
        assert_eq!(check(Some(seen(&record)), SUCCEEDED), Verdict::Met);
    }

    #[test]
    fn running_job_without_the_condition_is_not_there_yet() {
        let record = job(
            vec![
                condition(JobConditionType::Created, ConditionStatus::True, ""),
                condition(JobConditionType::Running, ConditionStatus::True, ""),
            ],
            false,
        );
        assert_eq!(check(Some(seen(&record)), SUCCEEDED), Verdict::NotYet);
    }

    #[test]
    fn a_false_condition_meets_only_a_wait_for_false() {
        let record = job(
            vec![condition(
                JobConditionType::Running,
                ConditionStatus::False,
                "",
            )],
            false,
        );
        let running = |status| WaitFor::Condition(JobConditionType::Running, status);
        assert_eq!(
            check(Some(seen(&record)), running(ConditionStatus::False)),
            Verdict::Met
        );
        assert_eq!(
            check(Some(seen(&record)), running(ConditionStatus::True)),
            Verdict::NotYet
        );
    }

    #[test]
    fn failed_job_never_meets_succeeded_and_says_why() {
        let record = job(
            vec![
                condition(JobConditionType::Running, ConditionStatus::False, ""),
                condition(
                    JobConditionType::Failed,
                    ConditionStatus::True,
                    "TFJob default/mnist has failed because 1 Worker replica(s) failed.",
                ),
            ],
            true,
        );
        assert_eq!(
            check(Some(seen(&record)), SUCCEEDED),
            Verdict::Never(
                "finished with condition Failed (TFJob default/mnist has failed because 1 Worker \
                 replica(s) failed.), so condition=Succeeded will never be met"
                    .to_owned()
            )
        );
    }

    #[test]
    fn succeeded_job_never_meets_failed() {
        let record = job(
            vec![condition(
                JobConditionType::Succeeded,
                ConditionStatus::True,
                "",
            )],
            true,
        );
        let failed = WaitFor::Condition(JobConditionType::Failed, ConditionStatus::True);
        assert_eq!(
            check(Some(seen(&record)), failed),
            Verdict::Never(
                "finished with condition Succeeded, so condition=Failed will never be met"
                    .to_owned()
            )
        );
    }

    #[test]
    fn deleted_job_never_meets_a_condition_but_meets_delete() {
        assert_eq!(
            check(None, SUCCEEDED),
            Verdict::Never("was deleted while waiting".to_owned())
        );
        assert_eq!(check(None, WaitFor::Delete), Verdict::Met);
        assert_eq!(
            check(Some(seen(&job(Vec::new(), true))), WaitFor::Delete),
            Verdict::NotYet
        );
    }
}
