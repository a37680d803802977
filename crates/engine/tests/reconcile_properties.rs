//! Properties of `reconcile` over random jobs and random histories: a simulated cluster executes
//! each plan, the world changes at random (pods start, finish, fail, restart in place, vanish;
//! time passes; the job is suspended, resumed, scaled), and the engine reconciles again.
//!
//! - a job is never both Succeeded and Failed, and both are absorbing;
//! - replica counts never exceed `replicas`;
//! - a plan, once executed, needs no repeating: reconciling the result creates and deletes
//!   nothing more, records no event and counts no transition twice;
//! - the same input gives the same plan; nothing panics, whatever is observed.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use jiff::{SignedDuration, Timestamp};
use proptest::prelude::*;
use trainctl_api::{ConditionStatus, JobConditionType, JobStatus, ReplicaType, TrainingJob};
use trainctl_engine::reconcile;
use trainctl_engine::reconcile::{
    GangScheduler, Observed, ObservedGang, ObservedReplica, Plan, PodGroupAction, PodGroupPhase,
    PodPhase, ReplicaSlot, RestartBackoff, WaitingFact,
};

const T0: Timestamp = Timestamp::constant(1_767_225_600, 0);

// Random jobs.

/// One replica type of a generated job: name, replicas, restart policy (`None`: the default).
type TypeShape = (&'static str, i32, Option<&'static str>);

fn restart_policy() -> impl Strategy<Value = Option<&'static str>> {
    prop_oneof![
        Just(None),
        Just(Some("Always")),
        Just(Some("OnFailure")),
        Just(Some("Never")),
        Just(Some("ExitCode")),
    ]
}

fn replica_type(
    name: &'static str,
    replicas: std::ops::Range<i32>,
) -> impl Strategy<Value = TypeShape> {
    (replicas, restart_policy()).prop_map(move |(n, policy)| (name, n, policy))
}

/// The kind and its replica types, within what validation accepts.
fn kind_and_types() -> impl Strategy<Value = (&'static str, Vec<TypeShape>)> {
    let optional = |s: BoxedStrategy<TypeShape>| proptest::option::of(s);
    prop_oneof![
        (
            prop_oneof![Just("Chief"), Just("Master"), Just("")],
            replica_type("Chief", 1..2),
            optional(replica_type("PS", 0..3).boxed()),
            replica_type("Worker", 1..4),
            optional(replica_type("Evaluator", 1..2).boxed()),
        )
            .prop_map(|(chief, (_, n, policy), ps, worker, evaluator)| {
                let mut types = Vec::new();
                if !chief.is_empty() {
                    types.push((chief, n, policy));
                }
                types.extend(ps);
                types.push(worker);
                types.extend(evaluator);
                ("TFJob", types)
            }),
        (
            proptest::bool::ANY,
            replica_type("Master", 1..2),
            replica_type("Worker", 1..4)
        )
            .prop_map(|(master, m, w)| {
                let types = if master { vec![m, w] } else { vec![w] };
                ("PyTorchJob", types)
            }),
        (replica_type("Master", 1..2), replica_type("Worker", 0..3))
            .prop_map(|(m, w)| ("XGBoostJob", vec![m, w])),
        (replica_type("Master", 1..2), replica_type("Worker", 1..3))
            .prop_map(|(m, w)| ("PaddleJob", vec![m, w])),
        replica_type("Worker", 1..4).prop_map(|w| ("JAXJob", vec![w])),
        (replica_type("Launcher", 1..2), replica_type("Worker", 0..3))
            .prop_map(|(l, w)| ("MPIJob", vec![l, w])),
    ]
}

#[derive(Debug, Clone)]
struct JobShape {
    kind: &'static str,
    types: Vec<TypeShape>,
    backoff_limit: Option<i32>,
    deadline: Option<i64>,
    ttl: Option<i32>,
    clean_pod_policy: Option<&'static str>,
    all_workers: bool,
    dynamic_worker: bool,
    elastic: bool,
}

fn job_shape() -> impl Strategy<Value = JobShape> {
    (
        kind_and_types(),
        proptest::option::of(0..4_i32),
        proptest::option::of(30..600_i64),
        proptest::option::of(0..120_i32),
        proptest::option::of(prop_oneof![Just("All"), Just("Running"), Just("None")]),
        proptest::bool::ANY,
        proptest::bool::weighted(0.2),
        proptest::bool::ANY,
    )
        .prop_map(
            |(
                (kind, types),
                backoff_limit,
                deadline,
                ttl,
                clean,
                all_workers,
                dynamic,
                elastic,
            )| {
                JobShape {
                    kind,
                    types,
                    backoff_limit,
                    deadline,
                    ttl,
                    clean_pod_policy: clean,
                    all_workers: all_workers && kind == "TFJob",
                    dynamic_worker: dynamic && kind == "TFJob",
                    elastic: elastic && kind == "PyTorchJob",
                }
            },
        )
}

fn build(shape: &JobShape) -> TrainingJob {
    let kind: trainctl_api::JobKind = shape.kind.parse().expect("a kind");
    let container = kind.default_container().unwrap_or("main");
    let mut run_policy = Vec::new();
    if let Some(n) = shape.backoff_limit {
        run_policy.push(format!("backoffLimit: {n}"));
    }
    if let Some(n) = shape.deadline {
        run_policy.push(format!("activeDeadlineSeconds: {n}"));
    }
    if let Some(n) = shape.ttl {
        run_policy.push(format!("ttlSecondsAfterFinished: {n}"));
    }
    if let Some(policy) = shape.clean_pod_policy {
        run_policy.push(format!("cleanPodPolicy: {policy}"));
    }
    let mut yaml = format!(
        "apiVersion: kubeflow.org/v1\nkind: {kind}\nmetadata: {{name: prop, namespace: ns}}\n\
         spec:\n  runPolicy: {{{}}}\n",
        run_policy.join(", ")
    );
    if shape.all_workers {
        yaml.push_str("  successPolicy: AllWorkers\n");
    }
    if shape.dynamic_worker {
        yaml.push_str("  enableDynamicWorker: true\n");
    }
    if shape.elastic {
        yaml.push_str("  elasticPolicy: {minReplicas: 1, maxReplicas: 4}\n");
    }
    writeln!(yaml, "  {}:", kind.replica_specs_field()).expect("writing to a String cannot fail");
    for (name, replicas, policy) in &shape.types {
        writeln!(yaml, "    {name}:\n      replicas: {replicas}")
            .expect("writing to a String cannot fail");
        if let Some(policy) = policy {
            writeln!(yaml, "      restartPolicy: {policy}")
                .expect("writing to a String cannot fail");
        }
        writeln!(
            yaml,
            "      template: {{spec: {{containers: [{{name: {container}, image: x}}]}}}}"
        )
        .expect("writing to a String cannot fail");
    }
    let mut manifests = trainctl_api::manifest::load_str("prop.yaml", &yaml);
    assert!(
        !manifests.has_errors(),
        "generated job must be valid:\n{yaml}\n{:#?}",
        manifests.diagnostics
    );
    manifests.jobs.remove(0).job
}

// Random histories.

/// Something that happens in the world between two reconciles.
#[derive(Debug, Clone)]
enum Change {
    /// The pod in the `n`-th occupied slot moves on (starts, finishes, fails).
    Advance { pod: usize, outcome: u8 },
    /// The pod in the `n`-th occupied slot restarts a container in place.
    RestartInPlace { pod: usize },
    /// The pod in the `n`-th occupied slot vanishes (node lost, deleted by hand).
    Vanish { pod: usize },
    /// Pods being deleted are gone.
    DeletionsComplete,
    /// Time passes.
    Wait { seconds: i64 },
    /// `suspend` is flipped.
    ToggleSuspend,
    /// The `n`-th replica type is scaled to `replicas`.
    Scale { replica_type: usize, replicas: i32 },
    /// The runtime cannot start pods for now, or can again.
    ToggleWaiting,
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        6 => (0..8_usize, 0..8_u8).prop_map(|(pod, outcome)| Change::Advance { pod, outcome }),
        1 => (0..8_usize).prop_map(|pod| Change::RestartInPlace { pod }),
        1 => (0..8_usize).prop_map(|pod| Change::Vanish { pod }),
        3 => Just(Change::DeletionsComplete),
        2 => (1..90_i64).prop_map(|seconds| Change::Wait { seconds }),
        1 => Just(Change::ToggleSuspend),
        1 => (0..5_usize, 0..4_i32).prop_map(|(replica_type, replicas)| Change::Scale {
            replica_type,
            replicas
        }),
        1 => Just(Change::ToggleWaiting),
    ]
}

/// The world a runtime would observe.
struct Cluster {
    job: TrainingJob,
    pods: BTreeMap<ReplicaSlot, ObservedReplica>,
    services: BTreeSet<ReplicaSlot>,
    retired_restarts: u32,
    gang: Option<ObservedGang>,
    pod_group_wanted: bool,
    waiting: bool,
    now: Timestamp,
}

impl Cluster {
    fn observed(&self) -> Observed {
        Observed {
            pods: self.pods.clone(),
            services: self.services.clone(),
            gang: self.gang.clone(),
            waiting: if self.waiting {
                vec![WaitingFact::Queued]
            } else {
                Vec::new()
            },
            refused: BTreeMap::new(),
            retired_restarts: self.retired_restarts,
            restart_backoff: RestartBackoff::NONE,
        }
    }

    /// Executes `plan`, checking that it never creates what exists nor deletes what is going.
    fn execute(&mut self, plan: &Plan) -> Result<(), TestCaseError> {
        for slot in &plan.create_pods {
            prop_assert!(
                !self.pods.contains_key(slot),
                "creates pod {slot} over an existing one"
            );
            self.pods
                .insert(slot.clone(), ObservedReplica::new(PodPhase::Pending));
        }
        for deletion in &plan.delete_pods {
            let pod = self.pods.get_mut(&deletion.slot);
            prop_assert!(
                pod.as_ref().is_some_and(|pod| !pod.deleting),
                "deletes pod {} that is absent or already going",
                deletion.slot
            );
            if let Some(pod) = pod {
                pod.deleting = true;
            }
        }
        for slot in &plan.create_services {
            prop_assert!(self.services.insert(slot.clone()), "service {slot} exists");
        }
        for deletion in &plan.delete_services {
            prop_assert!(
                self.services.remove(&deletion.slot),
                "deletes absent service {}",
                deletion.slot
            );
        }
        if let Some(status) = &plan.status {
            *self.job.status_mut() = Some(status.clone());
        }
        self.retired_restarts = plan.retired_restarts;
        // The PodGroup itself appears later, when time passes (see `Change::Wait`).
        match plan.pod_group {
            Some(PodGroupAction::Ensure) => self.pod_group_wanted = true,
            Some(PodGroupAction::Delete) => {
                self.pod_group_wanted = false;
                if let Some(gang) = &mut self.gang {
                    gang.pod_group = None;
                }
            }
            None => {}
        }
        Ok(())
    }

    fn nth_pod(&mut self, n: usize) -> Option<&mut ObservedReplica> {
        let len = self.pods.len();
        if len == 0 {
            return None;
        }
        self.pods.values_mut().nth(n % len)
    }

    fn apply(&mut self, change: &Change) {
        let now = self.now;
        match *change {
            Change::Advance { pod, outcome } => {
                let Some(pod) = self.nth_pod(pod) else { return };
                match (pod.phase, outcome) {
                    (PodPhase::Pending, 0..=5) => {
                        pod.phase = PodPhase::Running;
                        pod.started_at = Some(now);
                    }
                    (PodPhase::Pending, _) => {
                        pod.reason = Some("ImagePullBackOff".to_owned());
                    }
                    (PodPhase::Running, 0..=2) => {
                        pod.phase = PodPhase::Succeeded;
                        pod.exit_code = Some(0);
                        pod.finished_at = Some(now);
                    }
                    (PodPhase::Running, _) => {
                        pod.phase = PodPhase::Failed;
                        pod.exit_code = [None, Some(1), Some(2), Some(137), Some(143)]
                            .get(usize::from(outcome) - 3)
                            .copied()
                            .flatten();
                        pod.finished_at = Some(now);
                    }
                    _ => {}
                }
            }
            Change::RestartInPlace { pod } => {
                if let Some(pod) = self.nth_pod(pod)
                    && pod.phase == PodPhase::Running
                {
                    pod.restart_count += 1;
                }
            }
            Change::Vanish { pod } => {
                let len = self.pods.len();
                if let Some(slot) = self.pods.keys().nth(pod % len.max(1)).cloned() {
                    self.pods.remove(&slot);
                }
            }
            Change::DeletionsComplete => self.pods.retain(|_, pod| !pod.deleting),
            Change::Wait { seconds } => {
                self.now = now
                    .checked_add(SignedDuration::from_secs(seconds))
                    .expect("small waits");
                if let Some(gang) = &mut self.gang {
                    gang.pod_group = match gang.pod_group {
                        None if self.pod_group_wanted => Some(PodGroupPhase::Pending),
                        Some(PodGroupPhase::Pending) => Some(PodGroupPhase::Inqueue),
                        phase => phase,
                    };
                }
            }
            Change::ToggleSuspend => {
                let policy = self.job.run_policy_mut();
                policy.suspend = Some(!policy.suspend.unwrap_or(false));
            }
            Change::Scale {
                replica_type,
                replicas,
            } => {
                let specs = self.job.replica_specs_mut();
                let len = specs.len();
                if let Some(spec) = specs.values_mut().nth(replica_type % len.max(1)) {
                    spec.replicas = Some(replicas);
                }
            }
            Change::ToggleWaiting => self.waiting = !self.waiting,
        }
    }
}

fn is_true(status: Option<&JobStatus>, type_: JobConditionType) -> bool {
    status.is_some_and(|s| s.is_true(type_))
}

/// The finished conditions of a status: they must never change once set.
fn finish(status: Option<&JobStatus>) -> Vec<(JobConditionType, ConditionStatus, String)> {
    status
        .map(|s| {
            s.conditions
                .iter()
                .filter(|c| {
                    matches!(
                        c.type_,
                        JobConditionType::Succeeded | JobConditionType::Failed
                    )
                })
                .map(|c| (c.type_, c.status, c.message.clone()))
                .collect()
        })
        .unwrap_or_default()
}

fn check_invariants(cluster: &Cluster, plan: &Plan) -> Result<(), TestCaseError> {
    let before = cluster.job.status();
    let after = plan.status.as_ref().or(before);
    prop_assert!(
        !(is_true(after, JobConditionType::Succeeded) && is_true(after, JobConditionType::Failed)),
        "both Succeeded and Failed: {after:#?}"
    );
    if before.is_some_and(JobStatus::is_finished) {
        prop_assert_eq!(
            finish(before),
            finish(after),
            "Succeeded and Failed are absorbing"
        );
        prop_assert!(
            plan.create_pods.is_empty(),
            "a finished job creates nothing"
        );
        prop_assert!(plan.transitions.is_empty(), "a finished job counts nothing");
        prop_assert!(
            plan.requeue_after.is_none()
                || cluster
                    .job
                    .run_policy()
                    .ttl_seconds_after_finished
                    .is_some(),
            "a finished job is requeued only for its TTL"
        );
    }
    // Suspended and finished statuses keep their last counts (upstream zeroes only `active`);
    // everything else is counted afresh from the job's slots.
    let frozen =
        cluster.job.run_policy().is_suspended() || before.is_some_and(JobStatus::is_finished);
    if let Some(status) = after.filter(|_| !frozen) {
        for (replica_type, counts) in &status.replica_statuses {
            let replicas = cluster
                .job
                .replica_specs()
                .get(replica_type)
                .map_or(0, trainctl_api::ReplicaSpec::replicas_or_default);
            prop_assert!(
                counts.active + counts.succeeded + counts.failed <= replicas.max(0),
                "{replica_type}: {counts:?} exceed {replicas} replicas"
            );
        }
    }
    for slot in &plan.create_pods {
        let replicas = cluster
            .job
            .replica_specs()
            .get(&slot.replica_type)
            .map_or(0, trainctl_api::ReplicaSpec::replicas_or_default);
        prop_assert!(
            slot.index >= 0 && slot.index < replicas,
            "creates {slot} beyond replicas"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn reconcile_histories_keep_the_invariants(
        shape in job_shape(),
        gang in proptest::bool::weighted(0.2),
        changes in proptest::collection::vec(change(), 1..40),
    ) {
        let mut cluster = Cluster {
            job: build(&shape),
            pods: BTreeMap::new(),
            services: BTreeSet::new(),
            retired_restarts: 0,
            gang: gang.then_some(ObservedGang { scheduler: GangScheduler::Volcano, pod_group: None }),
            pod_group_wanted: false,
            waiting: false,
            now: T0,
        };
        for change in &changes {
            let observed = cluster.observed();
            let plan = reconcile(&cluster.job, &observed, cluster.now);
            prop_assert_eq!(&plan, &reconcile(&cluster.job, &observed, cluster.now), "deterministic");
            check_invariants(&cluster, &plan)?;
            cluster.execute(&plan)?;

            // Executed once, the plan needs no repeating.
            let again = reconcile(&cluster.job, &cluster.observed(), cluster.now);
            check_invariants(&cluster, &again)?;
            prop_assert!(again.create_pods.is_empty(), "creates again: {:?}", again.create_pods);
            prop_assert!(again.delete_pods.is_empty(), "deletes again: {:?}", again.delete_pods);
            prop_assert!(again.create_services.is_empty(), "creates services again");
            prop_assert!(again.delete_services.is_empty(), "deletes services again");
            prop_assert!(again.events.is_empty(), "records again: {:?}", again.events);
            prop_assert!(again.transitions.is_empty(), "counts again: {:?}", again.transitions);
            cluster.execute(&again)?;

            if plan.delete_job {
                break;
            }
            cluster.apply(change);
        }
    }
}

// Arbitrary, even inconsistent, observations.

fn any_replica_type() -> impl Strategy<Value = ReplicaType> {
    prop_oneof![
        Just(ReplicaType::Chief),
        Just(ReplicaType::Master),
        Just(ReplicaType::PS),
        Just(ReplicaType::Worker),
        Just(ReplicaType::Evaluator),
        Just(ReplicaType::Launcher),
        Just(ReplicaType::Other("Ghost".to_owned())),
    ]
}

fn any_pod() -> impl Strategy<Value = ObservedReplica> {
    (
        prop_oneof![
            Just(PodPhase::Pending),
            Just(PodPhase::Running),
            Just(PodPhase::Succeeded),
            Just(PodPhase::Failed)
        ],
        proptest::option::of(any::<i32>()),
        proptest::option::of("[A-Za-z]{0,12}"),
        proptest::option::of("[A-Za-z \"]{0,24}"),
        any::<i32>(),
        any::<bool>(),
        proptest::option::of(-1_000_000_i64..1_000_000),
    )
        .prop_map(
            |(phase, exit_code, reason, message, restart_count, deleting, finished)| {
                ObservedReplica {
                    phase,
                    exit_code,
                    reason,
                    message,
                    restart_count,
                    deleting,
                    started_at: None,
                    finished_at: finished
                        .and_then(|s| T0.checked_add(SignedDuration::from_secs(s)).ok()),
                }
            },
        )
}

fn any_status() -> impl Strategy<Value = Option<JobStatus>> {
    let condition = (
        prop_oneof![
            Just(JobConditionType::Created),
            Just(JobConditionType::Running),
            Just(JobConditionType::Restarting),
            Just(JobConditionType::Succeeded),
            Just(JobConditionType::Failed),
            Just(JobConditionType::Suspended),
        ],
        prop_oneof![
            Just(ConditionStatus::True),
            Just(ConditionStatus::False),
            Just(ConditionStatus::Unknown)
        ],
    )
        .prop_map(|(type_, status)| trainctl_api::JobCondition {
            type_,
            status,
            reason: String::new(),
            message: String::new(),
            last_update_time: None,
            last_transition_time: None,
        });
    proptest::option::of(
        (
            proptest::collection::vec(condition, 0..6),
            proptest::option::of(-10_000_000_i64..10_000_000),
            proptest::option::of(-10_000_000_i64..10_000_000),
        )
            .prop_map(|(conditions, start, completion)| {
                let time = |s: i64| {
                    T0.checked_add(SignedDuration::from_secs(s))
                        .ok()
                        .map(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time)
                };
                JobStatus {
                    conditions,
                    start_time: start.and_then(time),
                    completion_time: completion.and_then(time),
                    ..JobStatus::default()
                }
            }),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn reconcile_is_total_and_deterministic_on_any_observation(
        shape in job_shape(),
        status in any_status(),
        suspend in any::<bool>(),
        pods in proptest::collection::btree_map(
            (any_replica_type(), -3..12_i32).prop_map(|(t, i)| ReplicaSlot::new(t, i)),
            any_pod(),
            0..16,
        ),
        services in proptest::collection::btree_set(
            (any_replica_type(), -3..12_i32).prop_map(|(t, i)| ReplicaSlot::new(t, i)),
            0..8,
        ),
        retired in any::<u32>(),
        backoff in (any::<i32>(), any::<i32>()),
        now in -10_000_000_i64..10_000_000,
    ) {
        let mut job = build(&shape);
        *job.status_mut() = status;
        job.run_policy_mut().suspend = Some(suspend);
        let observed = Observed {
            pods,
            services,
            gang: None,
            waiting: Vec::new(),
            refused: BTreeMap::new(),
            retired_restarts: retired,
            restart_backoff: RestartBackoff {
                initial: SignedDuration::from_secs(i64::from(backoff.0)),
                max: SignedDuration::from_secs(i64::from(backoff.1)),
            },
        };
        let now = T0.checked_add(SignedDuration::from_secs(now)).expect("in range");
        let plan = reconcile(&job, &observed, now);
        prop_assert_eq!(&plan, &reconcile(&job, &observed, now));
        let sorted = |slots: Vec<&ReplicaSlot>| slots.windows(2).all(|w| w[0] <= w[1]);
        prop_assert!(sorted(plan.create_pods.iter().collect()));
        prop_assert!(sorted(plan.delete_pods.iter().map(|d| &d.slot).collect()));
    }
}
