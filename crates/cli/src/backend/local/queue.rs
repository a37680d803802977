//! What the server's queue says of the jobs it holds back, as the dashboard shows it: each
//! queued job's place and why it waits (`#2 in queue: queued behind 1 job; too large to start
//! before it: wants 2 CPUs, 1 CPU free`), for `get -o wide`, `describe` and `top node`.
//!
//! Only the running server knows its queue; with none running (or one that does not answer),
//! the commands say what the job's status says.

use std::collections::HashMap;

use trainctl_local::store::JobRecord;
use trainctl_server_api::JobSummary;

use crate::client::Client;

/// Why each queued job waits, by uid, in the dashboard's words; empty when none of `records`
/// may be queued or no server answers.
pub fn waiting_words(server: Option<&Client>, records: &[&JobRecord]) -> HashMap<String, String> {
    let may_be_queued = records
        .iter()
        .any(|record| !record.finished && matches!(record.state(), "Created" | "Pending"));
    let Some(server) = server.filter(|_| may_be_queued) else {
        return HashMap::new();
    };
    match server.job_summaries() {
        Ok(summaries) => summaries
            .iter()
            .filter_map(|summary| Some((summary.uid.clone(), words(summary)?)))
            .collect(),
        // A server that does not answer (killed, its `server.json` left behind): the status
        // says what it can.
        Err(_) => HashMap::new(),
    }
}

/// `#2 in queue: why`, the reason alone for a job held back without a place (its quota).
fn words(summary: &JobSummary) -> Option<String> {
    let why = summary.waiting.as_deref();
    match (summary.queue_position, why) {
        (Some(position), Some(why)) => Some(format!("#{position} in queue: {why}")),
        (Some(position), None) => Some(format!("#{position} in queue")),
        (None, why) => why.map(str::to_owned),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(position: Option<u32>, waiting: Option<&str>) -> JobSummary {
        JobSummary {
            namespace: "default".to_owned(),
            name: "mnist".to_owned(),
            kind: "TFJob",
            plural: "tfjobs",
            uid: "uid".to_owned(),
            state: "Pending",
            waiting: waiting.map(str::to_owned),
            failure: None,
            reason: None,
            queue_position: position,
            replicas_ready: 0,
            replicas_total: 1,
            restarts: 0,
            created: jiff::Timestamp::UNIX_EPOCH,
            started: None,
            finished_at: None,
            gpus: 0,
        }
    }

    #[test]
    fn a_queued_job_is_said_with_its_place_as_the_dashboard_says_it() {
        assert_eq!(
            words(&summary(Some(2), Some("queued behind 1 job"))).as_deref(),
            Some("#2 in queue: queued behind 1 job")
        );
        assert_eq!(
            words(&summary(None, Some("quota team-a/gpus: ..."))).as_deref(),
            Some("quota team-a/gpus: ...")
        );
        assert_eq!(words(&summary(None, None)), None);
    }
}
