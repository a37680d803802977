//! PaddlePaddle: `paddle.distributed.launch`'s `PADDLE_*` variables, collective or PS mode.
//!
//! A job with a Master runs in parameter-server mode (the master is the server), otherwise in
//! collective mode with worker 0 as the master endpoint. The first pod advertises its own pod IP,
//! read through `POD_IP_DUMMY` (`status.podIP`) and expanded by the kubelet in `PADDLE_MASTER`.

use k8s_openapi::api::core::v1::{EnvVar, EnvVarSource, ObjectFieldSelector};
use trainctl_api::{ReplicaType, TrainingJob};

use super::{PYTHONUNBUFFERED, var};
use crate::addressing::{Addressing, slot_port};

/// The variable holding the pod's own IP on the first pod.
pub const POD_IP_DUMMY: &str = "POD_IP_DUMMY";

/// The Paddle env of replica slot `(replica_type, index)`, in upstream's order.
#[must_use]
pub fn env_vars(
    job: &TrainingJob,
    replica_type: &ReplicaType,
    index: i32,
    addressing: &Addressing,
) -> Vec<EnvVar> {
    let ps_mode = job.replica_specs().contains_key(&ReplicaType::Master);
    let master_type = if ps_mode {
        ReplicaType::Master
    } else {
        ReplicaType::Worker
    };
    let master_port = slot_port(job, addressing, &master_type, 0);
    let is_first_pod = index == 0 && (!ps_mode || *replica_type == ReplicaType::Master);

    let mut vars = vec![
        var(PYTHONUNBUFFERED, "1"),
        var("PADDLE_JOB_ID", job.name()),
        var("PADDLE_NNODES", job.total_replicas().to_string()),
    ];
    if is_first_pod {
        vars.push(EnvVar {
            name: POD_IP_DUMMY.to_owned(),
            value: None,
            value_from: Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector {
                    api_version: None,
                    field_path: "status.podIP".to_owned(),
                }),
                ..EnvVarSource::default()
            }),
        });
        vars.push(var(
            "PADDLE_MASTER",
            format!("$({POD_IP_DUMMY}):{master_port}"),
        ));
    } else {
        let master_host = addressing.host(job, &master_type, 0, false);
        vars.push(var("PADDLE_MASTER", format!("{master_host}:{master_port}")));
    }
    if ps_mode {
        if *replica_type == ReplicaType::Master {
            vars.push(var("PADDLE_SERVER_NUM", "1"));
        } else {
            vars.push(var("PADDLE_TRAINER_NUM", "1"));
        }
    }
    vars
}

#[cfg(test)]
mod tests;
