"""The Kubeflow Python SDK (kubeflow-training 1.9.x) as a client of trainctl's operator.

Users drive training jobs with the SDK's TrainingClient, so what it reads must be what the
Kubeflow training operator writes. These tests check what upstream's own SDK e2e tests check
(kubeflow/training-operator v1.9.0, sdk/python/test/e2e: a job created from the SDK's model
objects reaches Succeeded; it is Created and Succeeded and neither Running, Restarting nor Failed;
its pods and logs can be read; it can be deleted; managedBy), and pin the exact values upstream's
controllers write (conditions' reasons and messages, replica statuses, events), taken from its
v1.9.0 source.

They run against the cluster in KUBECONFIG with the operator reconciling (scripts/e2e, through
scripts/lib/e2e-sdk.sh). kwok runs no container: a pod annotated trainctl.test/exit-code exits
with that code after trainctl.test/run-seconds, and every pod's log is two fixed lines
(scripts/cluster). Each test has a namespace of its own, deleted afterwards whatever happens.
"""

import datetime
import os
import re
import secrets
import time

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client import (
    V1Container,
    V1Namespace,
    V1ObjectMeta,
    V1PodSpec,
    V1PodTemplateSpec,
)

from kubeflow.training import (
    KubeflowOrgV1PyTorchJob,
    KubeflowOrgV1PyTorchJobSpec,
    KubeflowOrgV1ReplicaSpec,
    KubeflowOrgV1RunPolicy,
    KubeflowOrgV1TFJob,
    KubeflowOrgV1TFJobSpec,
    TrainingClient,
)
from kubeflow.training.constants import constants

# Every container's log on the e2e cluster (scripts/lib/cluster/components.sh).
KWOK_LOG = "trainctl e2e log line 1\ntrainctl e2e log line 2\n"
# How long a job may take to reach the condition awaited; they take seconds.
WAIT_SECONDS = 120
# The SDK polls every 15 s by default: 1 s keeps the suite short.
POLL_SECONDS = 1

EXIT_CODE = "trainctl.test/exit-code"
RUN_SECONDS = "trainctl.test/run-seconds"


@pytest.fixture(scope="session")
def kubeconfig():
    path = os.environ.get("KUBECONFIG")
    if not path:
        pytest.fail("KUBECONFIG is not set: run these tests through scripts/e2e")
    k8s_config.load_kube_config(config_file=path)
    return path


@pytest.fixture(scope="session")
def core(kubeconfig):
    return k8s.CoreV1Api()


@pytest.fixture
def namespace(request, core):
    """A fresh namespace for one test, deleted afterwards even when the test fails; on a failure
    what the namespace holds is printed first."""
    stem = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")
    stem = re.sub(r"^test-", "", stem)[:40].strip("-")
    name = f"sdk-{stem}-{secrets.token_hex(3)}"
    core.create_namespace(V1Namespace(metadata=V1ObjectMeta(name=name)))
    failed_before = request.session.testsfailed
    try:
        # Pods are refused until the namespace's default ServiceAccount exists.
        wait_until(
            lambda: any(
                sa.metadata.name == "default"
                for sa in core.list_namespaced_service_account(name).items
            ),
            f"the default ServiceAccount of {name}",
            timeout=60,
        )
        yield name
    finally:
        try:
            if request.session.testsfailed > failed_before:
                dump_namespace(core, name)
        finally:
            core.delete_namespace(name)


def wait_until(predicate, what, timeout=WAIT_SECONDS):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.5)


def settle(read, expected, timeout=30):
    """read() once it equals expected, else its last value after timeout seconds (for values
    that an operator may write in two steps, such as replica statuses after the last pod)."""
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if value == expected or time.monotonic() > deadline:
            return value
        time.sleep(0.5)


def dump_namespace(core, namespace):
    print(f"\n--- what namespace {namespace} holds")
    custom = k8s.CustomObjectsApi()
    for plural in ("tfjobs", "pytorchjobs"):
        for job in custom.list_namespaced_custom_object(
            constants.GROUP, constants.VERSION, namespace, plural
        )["items"]:
            print(f"{job['kind']} {job['metadata']['name']}: status {job.get('status')}")
    for pod in core.list_namespaced_pod(namespace).items:
        print(f"pod {pod.metadata.name}: {pod.status.phase}, labels {pod.metadata.labels}")
    for event in core.list_namespaced_event(namespace).items:
        print(
            f"event {event.involved_object.kind}/{event.involved_object.name}: "
            f"{event.type} {event.reason} {event.message!r} (x{event.count})"
        )


def replica(container, replicas=1, restart_policy="Never", exit_code=None, run_seconds=None):
    """A replica spec as users write it with the SDK's models, with a kwok script for its pods:
    exit with exit_code after run_seconds, or (exit_code None) run until deleted."""
    annotations = {constants.ISTIO_SIDECAR_INJECTION: "false"}
    command = ["sh", "-c", "sleep infinity"]
    if exit_code is not None:
        annotations[EXIT_CODE] = str(exit_code)
        annotations[RUN_SECONDS] = str(run_seconds or 1)
        command = ["sh", "-c", f"sleep {run_seconds or 1}; exit {exit_code}"]
    return KubeflowOrgV1ReplicaSpec(
        replicas=replicas,
        restart_policy=restart_policy,
        template=V1PodTemplateSpec(
            metadata=V1ObjectMeta(annotations=annotations),
            spec=V1PodSpec(containers=[V1Container(name=container, image="busybox", command=command)]),
        ),
    )


def tfjob(namespace, name, replica_specs, managed_by=None):
    return KubeflowOrgV1TFJob(
        api_version=constants.API_VERSION,
        kind=constants.TFJOB_KIND,
        metadata=V1ObjectMeta(name=name, namespace=namespace),
        spec=KubeflowOrgV1TFJobSpec(
            # "None" keeps the finished pods, so that their names and logs can be read.
            run_policy=KubeflowOrgV1RunPolicy(clean_pod_policy="None", managed_by=managed_by),
            tf_replica_specs=replica_specs,
        ),
    )


def pytorchjob(namespace, name, replica_specs, managed_by=None):
    return KubeflowOrgV1PyTorchJob(
        api_version=constants.API_VERSION,
        kind=constants.PYTORCHJOB_KIND,
        metadata=V1ObjectMeta(name=name, namespace=namespace),
        spec=KubeflowOrgV1PyTorchJobSpec(
            run_policy=KubeflowOrgV1RunPolicy(clean_pod_policy="None", managed_by=managed_by),
            pytorch_replica_specs=replica_specs,
        ),
    )


def conditions_of(client, job):
    """(type, status, reason, message) of each condition, in the job's order."""
    return [(c.type, c.status, c.reason, c.message) for c in client.get_job_conditions(job=job)]


def replica_counts(client, name, namespace):
    """{replica type: (active, succeeded, failed)} as the SDK reads the job's status (a count
    of 0 is omitted from the JSON, so the SDK reads None)."""
    status = client.get_job(name, namespace).status
    return {
        rtype: (s.active, s.succeeded, s.failed)
        for rtype, s in (status.replica_statuses or {}).items()
    }


def pod_phases(core, namespace):
    return {pod.metadata.name: pod.status.phase for pod in core.list_namespaced_pod(namespace).items}


def assert_finished_in_order(job):
    """Created, then Running, then the final condition: their transition times do not go back,
    and the job's start and completion times are set and in order."""
    times = [c.last_transition_time for c in job.status.conditions]
    assert times == sorted(times), f"transition times out of order: {times}"
    assert isinstance(job.status.start_time, datetime.datetime)
    assert isinstance(job.status.completion_time, datetime.datetime)
    assert job.status.start_time <= job.status.completion_time


def assert_only(client, job, condition):
    """What upstream's verify_job_e2e checks, for the final condition given."""
    checks = {
        "Created": client.is_job_created(job=job),
        "Running": client.is_job_running(job=job),
        "Restarting": client.is_job_restarting(job=job),
        "Succeeded": client.is_job_succeeded(job=job),
        "Failed": client.is_job_failed(job=job),
    }
    assert checks == {
        "Created": True,
        "Running": False,
        "Restarting": False,
        "Succeeded": condition == "Succeeded",
        "Failed": condition == "Failed",
    }


def delete_and_await_gone(client, core, name, namespace):
    """delete_job, then the job is gone and the garbage collector removes its pods (they are
    owned by the job)."""
    client.delete_job(name, namespace)

    def is_gone():
        try:
            client.get_job(name, namespace)
        except RuntimeError as error:
            if getattr(error.__cause__, "status", None) == 404:
                return True
            raise
        return False

    wait_until(is_gone, f"{name} to be deleted", timeout=30)
    with pytest.raises(RuntimeError, match=f"^Failed to get {client.job_kind}: {namespace}/{name}"):
        client.get_job(name, namespace)
    assert name not in [job.metadata.name for job in client.list_jobs(namespace)]
    wait_until(
        lambda: client.get_job_pod_names(name, namespace) == [],
        f"the pods of {name} to be deleted",
        timeout=60,
    )


def test_tfjob_with_one_worker_succeeds_and_the_sdk_reads_it_all(core, namespace):
    # Upstream's test_e2e_tfjob.py test_sdk_e2e: one Worker, restartPolicy Never.
    client = TrainingClient(job_kind=constants.TFJOB_KIND)
    name = "mnist"
    client.create_job(
        job=tfjob(namespace, name, {"Worker": replica("tensorflow", exit_code=0, run_seconds=3)}),
        namespace=namespace,
    )
    assert [job.metadata.name for job in client.list_jobs(namespace)] == [name]

    job = client.wait_for_job_conditions(
        name, namespace, wait_timeout=WAIT_SECONDS, polling_interval=POLL_SECONDS
    )

    assert conditions_of(client, job) == [
        ("Created", "True", "TFJobCreated", f"TFJob {name} is created."),
        ("Running", "False", "TFJobRunning", f"TFJob {namespace}/{name} is running."),
        ("Succeeded", "True", "TFJobSucceeded", f"TFJob {namespace}/{name} successfully completed."),
    ]
    assert_only(client, job, "Succeeded")
    assert_finished_in_order(job)
    assert settle(lambda: replica_counts(client, name, namespace), {"Worker": (None, 1, None)}) == {
        "Worker": (None, 1, None)
    }

    # Without a Chief or Master, worker 0 has the master role: the SDK's logs default to it.
    assert client.get_job_pod_names(name, namespace) == [f"{name}-worker-0"]
    assert client.get_job_pod_names(name, namespace, is_master=True) == [f"{name}-worker-0"]
    assert client.get_job_pod_names(name, namespace, replica_type="worker", replica_index=0) == [
        f"{name}-worker-0"
    ]
    assert client.get_job_pod_names(name, namespace, replica_type="ps") == []
    assert pod_phases(core, namespace) == {f"{name}-worker-0": "Succeeded"}

    logs, events = client.get_job_logs(name, namespace, verbose=True)
    assert logs == {f"{name}-worker-0": KWOK_LOG}
    # The SDK keys events "<kind>/<name>" and prefixes each message with its time.
    job_events = {message[len("2006-01-02 15:04:05 "):] for message in events[f"tfjob/{name}"]}
    assert job_events == {
        f"Created pod: {name}-worker-0",
        f"Created service: {name}-worker-0",
        f"Pod: {namespace}.{name}-worker-0 exited with code 0",
        f"TFJob {namespace}/{name} successfully completed.",
    }

    delete_and_await_gone(client, core, name, namespace)


def test_tfjob_with_a_chief_and_two_workers_succeeds_when_the_chief_does(core, namespace):
    client = TrainingClient(job_kind=constants.TFJOB_KIND, namespace=namespace)
    name = "chiefly"
    client.create_job(
        job=tfjob(
            namespace,
            name,
            {
                "Chief": replica("tensorflow", exit_code=0, run_seconds=5),
                "Worker": replica("tensorflow", replicas=2, exit_code=0, run_seconds=2),
            },
        )
    )

    job = client.wait_for_job_conditions(name, wait_timeout=WAIT_SECONDS, polling_interval=POLL_SECONDS)

    assert conditions_of(client, job) == [
        ("Created", "True", "TFJobCreated", f"TFJob {name} is created."),
        ("Running", "False", "TFJobRunning", f"TFJob {namespace}/{name} is running."),
        ("Succeeded", "True", "TFJobSucceeded", f"TFJob {namespace}/{name} successfully completed."),
    ]
    assert_only(client, job, "Succeeded")
    assert_finished_in_order(job)
    expected = {"Chief": (None, 1, None), "Worker": (None, 2, None)}
    assert settle(lambda: replica_counts(client, name, namespace), expected) == expected

    assert client.get_job_pod_names(name) == [f"{name}-chief-0", f"{name}-worker-0", f"{name}-worker-1"]
    # With a Chief, the chief alone has the master role.
    assert client.get_job_pod_names(name, is_master=True) == [f"{name}-chief-0"]
    assert client.get_job_pod_names(name, replica_type="worker") == [f"{name}-worker-0", f"{name}-worker-1"]
    assert client.get_job_pod_names(name, replica_type="worker", replica_index=1) == [f"{name}-worker-1"]
    assert pod_phases(core, namespace) == {
        f"{name}-chief-0": "Succeeded",
        f"{name}-worker-0": "Succeeded",
        f"{name}-worker-1": "Succeeded",
    }

    assert client.get_job_logs(name) == ({f"{name}-chief-0": KWOK_LOG}, {})
    assert client.get_job_logs(name, is_master=False) == (
        {f"{name}-chief-0": KWOK_LOG, f"{name}-worker-0": KWOK_LOG, f"{name}-worker-1": KWOK_LOG},
        {},
    )

    delete_and_await_gone(client, core, name, namespace)


def test_tfjob_whose_worker_exits_1_with_restart_policy_never_fails(core, namespace):
    client = TrainingClient(job_kind=constants.TFJOB_KIND)
    name = "doomed"
    client.create_job(
        job=tfjob(namespace, name, {"Worker": replica("tensorflow", exit_code=1, run_seconds=3)}),
        namespace=namespace,
    )

    # Awaiting Succeeded, the SDK gives up as soon as the job is Failed.
    with pytest.raises(RuntimeError, match=f"^TFJob {namespace}/{name} is Failed. "):
        client.wait_for_job_conditions(
            name, namespace, wait_timeout=WAIT_SECONDS, polling_interval=POLL_SECONDS
        )
    job = client.wait_for_job_conditions(
        name,
        namespace,
        expected_conditions={constants.JOB_CONDITION_FAILED},
        wait_timeout=WAIT_SECONDS,
        polling_interval=POLL_SECONDS,
    )

    assert client.is_job_failed(name, namespace)
    assert conditions_of(client, job) == [
        ("Created", "True", "TFJobCreated", f"TFJob {name} is created."),
        ("Running", "False", "TFJobRunning", f"TFJob {namespace}/{name} is running."),
        (
            "Failed",
            "True",
            "TFJobFailed",
            f"TFJob {namespace}/{name} has failed because 1 Worker replica(s) failed.",
        ),
    ]
    assert_only(client, job, "Failed")
    assert_finished_in_order(job)
    assert settle(lambda: replica_counts(client, name, namespace), {"Worker": (None, None, 1)}) == {
        "Worker": (None, None, 1)
    }
    assert client.get_job_pod_names(name, namespace) == [f"{name}-worker-0"]
    assert pod_phases(core, namespace) == {f"{name}-worker-0": "Failed"}
    assert client.get_job_logs(name, namespace) == ({f"{name}-worker-0": KWOK_LOG}, {})

    delete_and_await_gone(client, core, name, namespace)


def test_pytorchjob_with_a_master_and_a_worker_succeeds(core, namespace):
    # Upstream's test_e2e_pytorchjob.py test_sdk_e2e: one Master and one Worker, OnFailure. The
    # worker ends first, so that both counts are final when the master's success ends the job.
    client = TrainingClient(job_kind=constants.PYTORCHJOB_KIND)
    name = "resnet"
    client.create_job(
        job=pytorchjob(
            namespace,
            name,
            {
                "Master": replica("pytorch", restart_policy="OnFailure", exit_code=0, run_seconds=5),
                "Worker": replica("pytorch", restart_policy="OnFailure", exit_code=0, run_seconds=2),
            },
        ),
        namespace=namespace,
    )

    job = client.wait_for_job_conditions(
        name, namespace, wait_timeout=WAIT_SECONDS, polling_interval=POLL_SECONDS
    )

    assert conditions_of(client, job) == [
        ("Created", "True", "PyTorchJobCreated", f"PyTorchJob {name} is created."),
        ("Running", "False", "PyTorchJobRunning", f"PyTorchJob {name} is running."),
        ("Succeeded", "True", "PyTorchJobSucceeded", f"PyTorchJob {name} is successfully completed."),
    ]
    assert_only(client, job, "Succeeded")
    assert_finished_in_order(job)
    expected = {"Master": (None, 1, None), "Worker": (None, 1, None)}
    assert settle(lambda: replica_counts(client, name, namespace), expected) == expected
    # Upstream's PyTorchJob status names each replica type's pods by a selector (the Master's
    # always; the Worker's only when Go's map order reaches it before the Master's success).
    statuses = client.get_job(name, namespace).status.replica_statuses
    assert statuses["Master"].selector == (
        f"training.kubeflow.org/job-name={name},"
        "training.kubeflow.org/operator-name=pytorchjob-controller,"
        "training.kubeflow.org/replica-type=master"
    )

    assert client.get_job_pod_names(name, namespace) == [f"{name}-master-0", f"{name}-worker-0"]
    assert client.get_job_pod_names(name, namespace, is_master=True) == [f"{name}-master-0"]
    assert client.get_job_pod_names(name, namespace, replica_type="worker") == [f"{name}-worker-0"]
    assert pod_phases(core, namespace) == {
        f"{name}-master-0": "Succeeded",
        f"{name}-worker-0": "Succeeded",
    }
    assert client.get_job_logs(name, namespace) == ({f"{name}-master-0": KWOK_LOG}, {})
    assert client.get_job_logs(name, namespace, replica_type="worker", replica_index=0, is_master=False) == (
        {f"{name}-worker-0": KWOK_LOG},
        {},
    )

    delete_and_await_gone(client, core, name, namespace)


def test_pytorchjob_whose_master_exits_1_with_restart_policy_never_fails(core, namespace):
    client = TrainingClient(job_kind=constants.PYTORCHJOB_KIND)
    name = "diverged"
    client.create_job(
        job=pytorchjob(
            namespace,
            name,
            {
                "Master": replica("pytorch", exit_code=1, run_seconds=3),
                # Runs until deleted: the master's failure alone fails the job.
                "Worker": replica("pytorch"),
            },
        ),
        namespace=namespace,
    )

    job = client.wait_for_job_conditions(
        name,
        namespace,
        expected_conditions={constants.JOB_CONDITION_FAILED},
        wait_timeout=WAIT_SECONDS,
        polling_interval=POLL_SECONDS,
    )

    assert conditions_of(client, job) == [
        ("Created", "True", "PyTorchJobCreated", f"PyTorchJob {name} is created."),
        ("Running", "False", "PyTorchJobRunning", f"PyTorchJob {name} is running."),
        (
            "Failed",
            "True",
            "PyTorchJobFailed",
            f"PyTorchJob {name} is failed because 1 Master replica(s) failed.",
        ),
    ]
    assert_only(client, job, "Failed")
    assert_finished_in_order(job)
    expected = {"Master": (None, None, 1), "Worker": (1, None, None)}
    assert settle(lambda: replica_counts(client, name, namespace), expected) == expected
    # cleanPodPolicy None: the worker is left running.
    assert pod_phases(core, namespace) == {
        f"{name}-master-0": "Failed",
        f"{name}-worker-0": "Running",
    }
    assert client.get_job_logs(name, namespace) == ({f"{name}-master-0": KWOK_LOG}, {})

    delete_and_await_gone(client, core, name, namespace)


def test_pytorchjob_managed_by_the_training_operator_runs_and_by_multikueue_is_left_alone(
    core, namespace
):
    # Upstream's test_e2e_pytorchjob.py test_sdk_e2e_managed_by, its two valid values.
    client = TrainingClient(job_kind=constants.PYTORCHJOB_KIND, namespace=namespace)
    ours, theirs = "ours", "theirs"
    for name, managed_by in ((ours, "kubeflow.org/training-operator"), (theirs, "kueue.x-k8s.io/multikueue")):
        client.create_job(
            job=pytorchjob(
                namespace,
                name,
                {"Worker": replica("pytorch", restart_policy="OnFailure", exit_code=0, run_seconds=2)},
                managed_by=managed_by,
            )
        )
    assert sorted(job.metadata.name for job in client.list_jobs()) == [ours, theirs]

    job = client.wait_for_job_conditions(ours, wait_timeout=WAIT_SECONDS, polling_interval=POLL_SECONDS)
    assert conditions_of(client, job) == [
        ("Created", "True", "PyTorchJobCreated", f"PyTorchJob {ours} is created."),
        ("Running", "False", "PyTorchJobRunning", f"PyTorchJob {namespace}/{ours} is running."),
        (
            "Succeeded",
            "True",
            "PyTorchJobSucceeded",
            f"PyTorchJob {namespace}/{ours} successfully completed.",
        ),
    ]
    assert_only(client, job, "Succeeded")

    # By now the operator has long seen the other job: it has written nothing there.
    assert client.get_job_conditions(theirs) == []
    assert client.get_job(theirs).status is None
    assert client.get_job_pod_names(theirs) == []

    delete_and_await_gone(client, core, ours, namespace)
    delete_and_await_gone(client, core, theirs, namespace)
    assert client.list_jobs() == []


# Upstream's validating webhook refused a managedBy other than kubeflow.org/training-operator or
# kueue.x-k8s.io/multikueue; trainctl's CRDs list the two values, so the API server refuses it.
def test_pytorchjob_managed_by_an_unknown_controller_is_refused_at_create(namespace):
    # Upstream's test_e2e_pytorchjob.py test_sdk_e2e_managed_by, its invalid value.
    client = TrainingClient(job_kind=constants.PYTORCHJOB_KIND, namespace=namespace)
    name = "stray"
    job = pytorchjob(
        namespace,
        name,
        {"Worker": replica("pytorch", exit_code=0, run_seconds=1)},
        managed_by="kueue.x-k8s.io/other-controller",
    )
    try:
        client.create_job(job=job)
    except RuntimeError as refused:
        assert str(refused).startswith(f"Failed to create PyTorchJob: {namespace}/{name}")
        assert refused.__cause__.status == 422
    else:
        raise AssertionError(f"create_job accepted {namespace}/{name}")
    assert client.list_jobs() == []
