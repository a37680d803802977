//! Faults on the real control plane: the operator killed with SIGKILL in the middle of a
//! 1,000-replica job, kube-apiserver restarted under load, etcd stopped, two operators and a
//! leader killed, watches resumed from a compacted resource version. Each test runs its own
//! operators (see `trainctl_e2e::operator`); `scripts/e2e` runs them one at a time after the
//! other tests, with its own operator stopped.
//!
//! Every job here is a TFJob whose workers run until deleted. What "nothing twice" means: a
//! [`History`] watching the namespace from before the job was created saw each pod and service
//! name with a single uid, and never saw one go.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Pod, Service};
use kube::ResourceExt as _;
use kube::api::{Api, DeleteParams};
use kube::runtime::wait::await_condition;
use trainctl_api::JobKind;
use trainctl_e2e::operator::{
    History, Operator, await_leader, await_lease, await_renewal, await_running, cluster,
    etcd_compact_everything, lease, pod_deletions, sleeping_tfjob, within_for, worker_names,
};
use trainctl_e2e::{create_job, in_namespace, set_suspend};

/// How long an operator may take to hold the Lease: a killed predecessor's Lease expires after
/// its 15 s duration, counted from when this one first read it.
const LEADER: Duration = Duration::from_secs(45);

/// How long a job of a few workers may take to run.
const SMALL: Duration = Duration::from_secs(60);

/// How long the operator may take to finish a job after kube-apiserver restarted: the restarted
/// API server answers `403` for some 15-18 s while its RBAC cache warms up, then each watch
/// relists after its own short back-off (crates/operator/src/runtime/watch.rs). Before each watch
/// backed off on its own, kube-runtime's one back-off over all of a kind's watches grew with every
/// error of any of them, and the operator took 20 s to over 2 minutes to notice its pods again.
const AFTER_RESTART: Duration = Duration::from_secs(60);

/// The histories of the pods and the services of `namespace`.
async fn histories(client: &kube::Client, namespace: &str) -> (History, History) {
    (
        History::start::<Pod>(client, namespace, "pods").await,
        History::start::<Service>(client, namespace, "services").await,
    )
}

/// The operator killed with SIGKILL while it creates a 1,000-replica job's pods: the next
/// operator creates the rest, and every pod and service was created exactly once (none created
/// twice, none deleted and re-created; the pods that existed at the kill keep their uids).
#[tokio::test]
#[ignore = "needs the e2e control plane: scripts/e2e"]
async fn fault_operator_killed_mid_creation_of_a_1000_replica_job_creates_nothing_twice() {
    in_namespace("kill1000", |client, namespace| async move {
        let (mut pods, mut services) = histories(&client, &namespace).await;
        let mut first = Operator::start("fault-kill-first");
        await_leader(&client, &first, LEADER).await;
        create_job(&client, &namespace, &sleeping_tfjob("big", 1000)).await;
        pods.until(Duration::from_secs(120), "100 pods", |live| live >= 100)
            .await;
        first.kill();
        let at_kill = pods.record().live;
        assert!(
            at_kill.len() < 1000,
            "every pod existed before the kill ({}): nothing was interrupted",
            at_kill.len()
        );
        let mut second = Operator::start("fault-kill-second");
        await_leader(&client, &second, LEADER).await;
        let job = await_running(&client, &namespace, "big", 1000, Duration::from_secs(300)).await;
        services
            .until(Duration::from_secs(60), "1000 services", |live| {
                live >= 1000
            })
            .await;
        let names = worker_names("big", 1000);
        pods.record().assert_created_once("pods", &names);
        services.record().assert_created_once("services", &names);
        let now = pods.record().live;
        let changed: Vec<&String> = at_kill
            .iter()
            .filter(|(name, uid)| now.get(*name) != Some(uid))
            .map(|(name, _)| name)
            .collect();
        assert!(
            changed.is_empty(),
            "pods of the killed operator replaced: {changed:?}"
        );
        assert_eq!(
            job.data["status"]["replicaStatuses"]["Worker"]["active"],
            1000
        );
        second.assert_running();
        second.stop().await;
    })
    .await;
}

/// kube-apiserver restarted while a 300-replica job's pods are being created: the operator
/// (still running) finishes the job with exactly 300 pods and services, each created once.
#[tokio::test]
#[ignore = "needs the e2e control plane: scripts/e2e"]
async fn fault_apiserver_restarted_under_load_creates_nothing_twice() {
    in_namespace("apiserver", |client, namespace| async move {
        let (mut pods, mut services) = histories(&client, &namespace).await;
        let mut operator = Operator::start("fault-apiserver");
        await_leader(&client, &operator, LEADER).await;
        create_job(&client, &namespace, &sleeping_tfjob("load", 300)).await;
        pods.until(Duration::from_secs(120), "20 pods", |live| live >= 20)
            .await;
        // Right after a renewal the leader has its whole renew deadline (10 s) for the restart.
        await_renewal(&client).await;
        let at_restart = pods.live();
        assert!(
            at_restart < 300,
            "every pod existed before the restart ({at_restart})"
        );
        cluster("restart", "kube-apiserver").await;
        await_running(&client, &namespace, "load", 300, AFTER_RESTART).await;
        services
            .until(Duration::from_secs(60), "300 services", |live| live >= 300)
            .await;
        let names = worker_names("load", 300);
        pods.record().assert_created_once("pods", &names);
        services.record().assert_created_once("services", &names);
        operator.assert_running();
        operator.stop().await;
    })
    .await;
}

/// etcd stopped for 10 s under a running job: the leader cannot renew its Lease within the
/// renew deadline (10 s) and exits, as controller-runtime does, with that reason and no panic;
/// its replacement (what the Deployment would start) leaves the job's pods alone and
/// reconciles a change made afterwards: suspend deletes the pods, resume creates them anew.
#[tokio::test]
#[ignore = "needs the e2e control plane: scripts/e2e"]
async fn fault_etcd_stopped_for_10_seconds() {
    in_namespace("etcd", |client, namespace| async move {
        let mut pods = History::start::<Pod>(&client, &namespace, "pods").await;
        let mut first = Operator::start("fault-etcd-first");
        await_leader(&client, &first, LEADER).await;
        create_job(&client, &namespace, &sleeping_tfjob("steady", 3)).await;
        await_running(&client, &namespace, "steady", 3, SMALL).await;
        cluster("stop", "etcd").await;
        tokio::time::sleep(Duration::from_secs(10)).await;
        cluster("start", "etcd").await;
        let status = first.exited_within(Duration::from_secs(30)).await;
        let log = first.log();
        assert_eq!(status.code(), Some(1), "{status}");
        assert!(!log.contains("panicked"), "the operator panicked");
        assert!(
            log.contains(
                "error: lost leadership (could not renew the lease kubeflow/trainctl-operator \
                 within 10s"
            ),
            "the operator exited for another reason than the lost Lease"
        );
        let mut second = Operator::start("fault-etcd-second");
        await_leader(&client, &second, LEADER).await;
        await_running(&client, &namespace, "steady", 3, SMALL).await;
        let names = worker_names("steady", 3);
        pods.record().assert_created_once("pods", &names);
        set_suspend(&client, &namespace, JobKind::TFJob, "steady", true).await;
        pods.until(SMALL, "no pod", |live| live == 0).await;
        set_suspend(&client, &namespace, JobKind::TFJob, "steady", false).await;
        await_running(&client, &namespace, "steady", 3, SMALL).await;
        let record = pods.record();
        assert_eq!(
            record
                .live
                .keys()
                .cloned()
                .collect::<std::collections::BTreeSet<_>>(),
            names
        );
        for (name, uids) in &record.uids {
            assert_eq!(
                uids.len(),
                2,
                "{name}: one pod before the suspension, one after: {uids:?}"
            );
        }
        assert_eq!(record.gone.len(), 3, "{:?}", record.gone);
        second.assert_running();
        second.stop().await;
    })
    .await;
}

/// Two operators: one holds the Lease and reconciles, the other stands by; the leader killed
/// with SIGKILL, the other takes the Lease once it has not been renewed for the lease duration
/// (15 s; well within 30 s of the kill), then reconciles a new job and re-creates nothing of
/// the first.
#[tokio::test]
#[ignore = "needs the e2e control plane: scripts/e2e"]
async fn fault_two_operators_with_leader_election_one_reconciles_and_a_kill_hands_over() {
    in_namespace("pair", |client, namespace| async move {
        let pods = History::start::<Pod>(&client, &namespace, "pods").await;
        let mut operators = [
            Operator::start("fault-pair-a"),
            Operator::start("fault-pair-b"),
        ];
        let held = await_lease(
            &client,
            "a pair's operator to hold the Lease",
            LEADER,
            |spec| {
                spec.holder_identity
                    .as_deref()
                    .is_some_and(|holder| holder.starts_with("fault-pair-"))
            },
        )
        .await;
        let holder = held.holder_identity.clone().unwrap_or_default();
        let leader = operators
            .iter()
            .position(|operator| operator.holds(&holder))
            .expect("one of them");
        let standby = 1 - leader;
        operators[standby]
            .logged_within(
                "standing by: another process holds the lease",
                Duration::from_secs(10),
            )
            .await;
        create_job(&client, &namespace, &sleeping_tfjob("first", 2)).await;
        await_running(&client, &namespace, "first", 2, SMALL).await;
        assert!(
            !operators[standby].log().contains("became the leader"),
            "the standby led too"
        );
        operators[leader].kill();
        let killed = Instant::now();
        // A renewal sent before the kill has landed by now; nobody renews afterwards.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let last = lease(&client).await.expect("the Lease");
        assert_eq!(last.holder_identity.as_deref(), Some(holder.as_str()));
        let taken = await_leader(&client, &operators[standby], Duration::from_secs(40)).await;
        let handover = killed.elapsed();
        assert!(
            handover < Duration::from_secs(30),
            "the standby took the Lease after {handover:?}"
        );
        let renewed = last.renew_time.expect("a renew time").0;
        let acquired = taken.acquire_time.expect("an acquire time").0;
        assert!(
            acquired.duration_since(renewed) >= jiff::SignedDuration::from_secs(15),
            "the standby took the Lease {} after its last renewal, before it expired",
            acquired.duration_since(renewed)
        );
        assert_eq!(
            taken.lease_transitions,
            last.lease_transitions.map(|n| n + 1)
        );
        create_job(&client, &namespace, &sleeping_tfjob("second", 2)).await;
        await_running(&client, &namespace, "second", 2, SMALL).await;
        await_running(&client, &namespace, "first", 2, SMALL).await;
        let names: std::collections::BTreeSet<String> = worker_names("first", 2)
            .into_iter()
            .chain(worker_names("second", 2))
            .collect();
        pods.record().assert_created_once("pods", &names);
        let [a, b] = operators;
        let survivor = if standby == 0 { a } else { b };
        survivor.stop().await;
    })
    .await;
}

/// kube-apiserver stopped, etcd's history compacted past every resource version handed out,
/// kube-apiserver started: the operator (the same process, still leading) resumes its watches
/// from a compacted resource version, gets `410 Expired`, relists, and then reconciles a job
/// created afterwards and re-creates a pod deleted by hand, once.
#[tokio::test]
#[ignore = "needs the e2e control plane: scripts/e2e"]
async fn fault_a_watch_whose_resource_version_was_compacted_relists() {
    in_namespace("compacted", |client, namespace| async move {
        let mut pods = History::start::<Pod>(&client, &namespace, "pods").await;
        let mut operator = Operator::start("fault-compacted");
        await_leader(&client, &operator, LEADER).await;
        create_job(&client, &namespace, &sleeping_tfjob("before", 2)).await;
        await_running(&client, &namespace, "before", 2, SMALL).await;
        let logged_before = operator.log().len();
        await_renewal(&client).await;
        cluster("stop", "kube-apiserver").await;
        let revision = etcd_compact_everything();
        cluster("start", "kube-apiserver").await;
        create_job(&client, &namespace, &sleeping_tfjob("after", 2)).await;
        await_running(&client, &namespace, "after", 2, AFTER_RESTART).await;
        let log = operator.log();
        let relisted = log[logged_before..].lines().any(|line| {
            line.contains("kind=TFJob") && line.contains("too old") && line.contains("Expired")
        });
        assert!(
            relisted,
            "no TFJob watch of the operator was refused as expired (revision {revision})"
        );
        let pod_api: Api<Pod> = Api::namespaced(client.clone(), &namespace);
        let deleted = pod_api
            .get("before-worker-0")
            .await
            .expect("the pod")
            .uid()
            .expect("a uid");
        // kwok, the node's kubelet, is stopped meanwhile: it deletes by name a pod it sees
        // being deleted, and that late deletion could take the re-created pod (a kubelet
        // deletes with the pod's uid). At once (no grace period): no kubelet confirms.
        cluster("stop", "kwok").await;
        pod_api
            .delete("before-worker-0", &DeleteParams::default().grace_period(0))
            .await
            .expect("deleted");
        let recreated = within_for(
            AFTER_RESTART,
            "before-worker-0 to be re-created",
            await_condition(
                pod_api.clone(),
                "before-worker-0",
                move |pod: Option<&Pod>| {
                    pod.and_then(kube::ResourceExt::uid)
                        .is_some_and(|uid| uid != deleted)
                },
            ),
        )
        .await
        .expect("the watch works")
        .and_then(|pod| pod.uid())
        .expect("the re-created pod");
        cluster("start", "kwok").await;
        await_running(&client, &namespace, "before", 2, AFTER_RESTART).await;
        // The history's own watch relisted too: read it once it has seen the new pod.
        pods.until_live(AFTER_RESTART, "before-worker-0", &recreated)
            .await;
        let record = pods.record();
        for (name, uids) in &record.uids {
            let expected = if name == "before-worker-0" { 2 } else { 1 };
            assert_eq!(
                uids.len(),
                expected,
                "{name}: {uids:?}; deleted: {:#?}",
                pod_deletions(&namespace, name)
            );
        }
        assert_eq!(record.live.len(), 4, "{:?}", record.live);
        operator.assert_running();
        operator.stop().await;
    })
    .await;
}
