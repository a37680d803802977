"""Digits classifier trained with tf.distribute.ParameterServerStrategy (examples/tfjob-ps.yaml).

Roles, from TF_CONFIG:
  ps-0             holds the model variables; runs a tf.distribute.Server and blocks forever.
  worker-0, -1     run a tf.distribute.Server and block forever; the chief sends them work.
  chief-0          the coordinator: builds the model (variables placed on the ps), and schedules
                   training steps on the workers through tf.distribute.coordinator.ClusterCoordinator
                   (asynchronous training: each step reads the current variables from the ps,
                   computes gradients on one worker's batch and applies them on the ps).
The job is done when the chief exits 0; the runtime then stops the ps and workers (they never exit
on their own), as the Kubeflow operator does (success policy: chief).

Fault tolerance: the ClusterCoordinator re-schedules a step whose worker died and waits for the
worker to come back (restartPolicy OnFailure restarts it in place). If the ps dies, the variables
are lost; the chief gets an error, exits non-zero, and training restarts from scratch.

Environment:
  TF_CONFIG           injected by the TFJob controller (trainctl: loopback addresses)
  EPOCHS              number of epochs (default 20)
  TF_USE_LEGACY_KERAS must be 1 (tf-keras / Keras 2)
"""

import json
import os
import sys
import time

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Worker/ps servers: fail RPCs fast instead of waiting on an unreachable peer; the coordinator retries.
os.environ.setdefault("GRPC_FAIL_FAST", "use_caller")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

SEED = 42
EPOCHS = int(os.environ.get("EPOCHS", "20"))
BATCH_PER_WORKER = 64


def log(msg):
    print(msg, flush=True)


def load_data():
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = (digits.data / 16.0).astype("float32")
    y = digits.target.astype("int64")
    return train_test_split(x, y, test_size=0.25, random_state=SEED, stratify=y)


def run_server(resolver):
    # Workers and parameter servers only serve the chief's requests.
    log("%s-%d: serving on %s" % (resolver.task_type, resolver.task_id, resolver.cluster_spec().task_address(resolver.task_type, resolver.task_id)))
    server = tf.distribute.Server(
        resolver.cluster_spec(),
        job_name=resolver.task_type,
        task_index=resolver.task_id,
        protocol=resolver.rpc_layer or "grpc",
        start=True,
    )
    server.join()  # never returns


def main():
    if not os.environ.get("TF_CONFIG"):
        log("TF_CONFIG is not set: this example needs a chief, workers and a ps (run examples/tfjob-ps.yaml)")
        return 1
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    if resolver.task_type in ("worker", "ps"):
        run_server(resolver)
        return 0
    if resolver.task_type != "chief":
        log("unsupported task type %r" % resolver.task_type)
        return 1

    tf.keras.utils.set_random_seed(SEED)
    x_train, x_test, y_train, y_test = load_data()
    num_workers = len(resolver.cluster_spec().as_dict().get("worker", []))

    strategy = tf.distribute.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    log("chief-0: coordinating %d workers, %d ps" % (num_workers, len(resolver.cluster_spec().as_dict().get("ps", []))))

    steps_per_epoch = len(x_train) // BATCH_PER_WORKER

    def dataset_fn(input_context):
        # Each worker reads the whole (tiny) training set in its own shuffled order.
        ds = tf.data.Dataset.from_tensor_slices((x_train, y_train))
        ds = ds.shuffle(len(x_train), seed=SEED + input_context.input_pipeline_id).repeat()
        return ds.batch(BATCH_PER_WORKER, drop_remainder=True).prefetch(2)

    @tf.function
    def per_worker_dataset_fn():
        return strategy.distribute_datasets_from_function(dataset_fn)

    per_worker_iterator = iter(coordinator.create_per_worker_dataset(per_worker_dataset_fn))

    with strategy.scope():
        model = tf.keras.Sequential(
            [
                tf.keras.layers.Input(shape=(64,)),
                tf.keras.layers.Dense(128, activation="relu"),
                tf.keras.layers.Dense(64, activation="relu"),
                tf.keras.layers.Dense(10),
            ]
        )
        optimizer = tf.keras.optimizers.Adam(2e-3)
        train_loss = tf.keras.metrics.Mean("loss")
        train_acc = tf.keras.metrics.SparseCategoricalAccuracy("accuracy")
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=tf.keras.losses.Reduction.NONE)

    @tf.function
    def train_step(iterator):
        def replica_fn(x, y):
            with tf.GradientTape() as tape:
                logits = model(x, training=True)
                loss = tf.nn.compute_average_loss(loss_fn(y, logits), global_batch_size=BATCH_PER_WORKER)
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            train_loss.update_state(loss)
            train_acc.update_state(y, logits)
            return loss

        x, y = next(iterator)
        return strategy.run(replica_fn, args=(x, y))

    t0 = time.monotonic()
    for epoch in range(EPOCHS):
        for _ in range(steps_per_epoch):
            coordinator.schedule(train_step, args=(per_worker_iterator,))
        coordinator.join()  # wait for all scheduled steps (re-scheduled ones included)
        log(
            "epoch %d/%d loss=%.4f acc=%.4f (%.1fs)"
            % (epoch + 1, EPOCHS, train_loss.result().numpy(), train_acc.result().numpy(), time.monotonic() - t0)
        )
        train_loss.reset_state()
        train_acc.reset_state()

    # The chief reads the trained variables from the ps and evaluates locally.
    pred = np.argmax(model(x_test, training=False).numpy(), axis=1)
    log("accuracy: %.4f" % float(np.mean(pred == y_test)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
