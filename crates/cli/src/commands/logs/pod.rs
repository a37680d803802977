//! A pod's name as `kubectl logs` takes it (`mnist-worker-0`), for a job of this machine: the
//! job `mnist` and its replica `worker-0`, when no job has the name itself.

use trainctl_engine::ReplicaSlot;
use trainctl_local::store::{JobRecord, Store};

use crate::backend::local::records;
use crate::target::Target;

/// A job found by one of its pods' names, and the replica the name names.
#[derive(Debug)]
pub struct PodJob {
    /// The job.
    pub record: JobRecord,
    /// The replica (`worker-0`).
    pub replica: String,
}

/// The job whose name, followed by `-<type>-<index>` of one of its replicas, is `target`'s
/// name (`mnist-worker-0`), of `target`'s kind and namespace; `None` when there is none. Only
/// used when no job has the name itself. The longest job name that fits wins.
pub fn job_of_pod(
    target: &Target<'_>,
    store: &Store,
    slots_of: impl Fn(&JobRecord) -> anyhow::Result<Vec<ReplicaSlot>>,
) -> anyhow::Result<Option<PodJob>> {
    for (job_name, replica) in pod_name_splits(target.name) {
        let named = Target {
            name: job_name,
            ..*target
        };
        let Some(record) = records::find(store, &named, "logs")? else {
            continue;
        };
        let slots = slots_of(&record)?;
        if let Some(slot) = slots
            .iter()
            .find(|slot| slot.to_string().eq_ignore_ascii_case(replica))
        {
            let replica = slot.to_string();
            return Ok(Some(PodJob { record, replica }));
        }
    }
    Ok(None)
}

/// The ways `name` reads as `<job>-<type>-<index>`, the longest job name first: each
/// `(job, "<type>-<index>")` with a non-empty job and type and a numeric index.
pub fn pod_name_splits(name: &str) -> Vec<(&str, &str)> {
    let Some((rest, index)) = name.rsplit_once('-') else {
        return Vec::new();
    };
    if index.is_empty() || !index.bytes().all(|byte| byte.is_ascii_digit()) {
        return Vec::new();
    }
    rest.match_indices('-')
        .rev()
        .filter(|&(cut, _)| cut > 0 && cut + 1 < rest.len())
        .map(|(cut, _)| (&name[..cut], &name[cut + 1..]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pod_name_reads_as_a_job_and_a_replica_longest_job_first() {
        assert_eq!(
            pod_name_splits("basic-tfjob-chief-0"),
            [("basic-tfjob", "chief-0"), ("basic", "tfjob-chief-0")]
        );
        assert_eq!(pod_name_splits("mnist-worker-12"), [("mnist", "worker-12")]);
        for not_a_pod in [
            "mnist",
            "mnist-worker",
            "worker-0",
            "mnist-worker-x",
            "-worker-0",
        ] {
            assert_eq!(pod_name_splits(not_a_pod), [], "{not_a_pod}");
        }
    }
}
