"""Digits classifier trained with tf.distribute.MultiWorkerMirroredStrategy (examples/tfjob-mwms.yaml).

Every replica (chief-0, worker-0, worker-1) runs this same script; the cluster comes from TF_CONFIG.
Each process holds a full copy of the model, reads its shard of every global batch, and the gradients
are all-reduced (ring, over gRPC) every step, so all replicas advance in lock step.

Fault tolerance (what happens when a replica dies), measured with kill -9 of one replica mid-epoch:
  MWMS is synchronous: one lost replica stops the whole cluster; there is no elastic shrinking, and
  nothing hangs:
  - a survivor whose ring all-reduce exchanges data with the dead peer fails at once: the gRPC call
    gets "connection refused/reset", model.fit raises UnavailableError, exit status 1 (~1-2 s);
  - the other survivor fails when TensorFlow's coordination service (leader: chief-0) reports the
    loss: the leader itself died, or the dead peer came back with a new incarnation ("unexpectedly
    tried to connect with a different incarnation"), or it stopped sending heartbeats; it gets
    UnavailableError/AbortedError, exit status 1 (within ~10 s).
  The CommunicationOptions timeout below also bounds any single collective, as a last resort.
  With restartPolicy OnFailure every failed replica is restarted in place (same TF_CONFIG, same
  port); the restarted processes wait for each other at start-up, and BackupAndRestore resumes all
  of them from the last completed epoch (the backup is written at the end of every epoch and
  deleted when training completes).

Environment:
  TF_CONFIG           injected by the TFJob controller (trainctl: loopback addresses)
  JOB_NAME            the job's name (the manifest sets it from the job-name label)
  BACKUP_DIR          BackupAndRestore directory; default <tmp>/trainctl-examples/<JOB_NAME>-backup
  EPOCHS              number of epochs (default 15)
  TRAINCTL_TENSORBOARD_DIR  where the chief writes its TensorBoard event files (trainctl sets it)
  TF_USE_LEGACY_KERAS must be 1 (tf-keras / Keras 2; Keras 3's fit fails under MWMS)
"""

import json
import os
import sys
import tempfile
import time

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

SEED = 42
EPOCHS = int(os.environ.get("EPOCHS", "15"))
BATCH_PER_REPLICA = 32
# Upper bound on one collective (all-reduce); a step takes milliseconds, so 60 s means a peer is gone.
COLLECTIVE_TIMEOUT_S = 60


def log(msg):
    print(msg, flush=True)


def main():
    tf_config = json.loads(os.environ.get("TF_CONFIG", "{}"))
    task = tf_config.get("task", {"type": "chief", "index": 0})
    cluster = tf_config.get("cluster", {})
    is_chief = task["type"] == "chief" or ("chief" not in cluster and task["type"] == "worker" and task["index"] == 0)
    me = "%s-%d" % (task["type"], task["index"])

    job_name = os.environ.get("JOB_NAME") or "digits-mwms"
    backup_dir = os.environ.get("BACKUP_DIR") or os.path.join(
        tempfile.gettempdir(), "trainctl-examples", job_name + "-backup"
    )

    tf.keras.utils.set_random_seed(SEED)
    # Keep each process to one op thread pool of modest size: three replicas share a small machine.
    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.config.threading.set_intra_op_parallelism_threads(1)

    strategy = tf.distribute.MultiWorkerMirroredStrategy(
        communication_options=tf.distribute.experimental.CommunicationOptions(
            implementation=tf.distribute.experimental.CommunicationImplementation.RING,
            timeout_seconds=COLLECTIVE_TIMEOUT_S,
        )
    )
    n = strategy.num_replicas_in_sync
    log("%s: %d replicas in sync, backup_dir=%s" % (me, n, backup_dir))

    digits = load_digits()
    x = (digits.data / 16.0).astype("float32")
    y = digits.target.astype("int64")
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.25, random_state=SEED, stratify=y)

    global_batch = BATCH_PER_REPLICA * n
    steps_per_epoch = len(x_train) // global_batch
    ds = tf.data.Dataset.from_tensor_slices((x_train, y_train)).shuffle(len(x_train), seed=SEED).repeat().batch(global_batch)
    opts = tf.data.Options()
    opts.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    ds = ds.with_options(opts)

    with strategy.scope():
        model = tf.keras.Sequential(
            [
                tf.keras.layers.Input(shape=(64,)),
                tf.keras.layers.Dense(128, activation="relu"),
                tf.keras.layers.Dense(64, activation="relu"),
                tf.keras.layers.Dense(10),
            ]
        )
        model.compile(
            optimizer=tf.keras.optimizers.Adam(1e-3 * n),
            loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
        )

    class Progress(tf.keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            self.t0 = time.monotonic()

        def on_epoch_begin(self, epoch, logs=None):
            if epoch > 0 and not hasattr(self, "announced"):
                log("%s: resuming from backup at epoch %d" % (me, epoch + 1))
            self.announced = True

        def on_epoch_end(self, epoch, logs=None):
            logs = logs or {}
            log(
                "epoch %d/%d loss=%.4f acc=%.4f (%.1fs)"
                % (epoch + 1, EPOCHS, logs.get("loss", float("nan")), logs.get("accuracy", float("nan")), time.monotonic() - self.t0)
            )

    callbacks = [tf.keras.callbacks.BackupAndRestore(backup_dir=backup_dir), Progress()]
    # The training curves, where trainctl reads them (`get -o wide`, `describe`): the chief's, in
    # the job's TensorBoard directory; under MWMS every replica writes summaries, so the others
    # write theirs to a directory of their own.
    tensorboard_dir = os.environ.get("TRAINCTL_TENSORBOARD_DIR")
    if tensorboard_dir:
        if not is_chief:
            tensorboard_dir = tempfile.mkdtemp(prefix="tb-%s-" % me)
        callbacks.append(tf.keras.callbacks.TensorBoard(log_dir=tensorboard_dir, update_freq="epoch"))

    model.fit(
        ds,
        epochs=EPOCHS,
        steps_per_epoch=steps_per_epoch,
        verbose=0,
        callbacks=callbacks,
    )

    # Local forward pass with this replica's (identical) copy of the weights: no collective needed.
    pred = np.argmax(model(x_test, training=False).numpy(), axis=1)
    acc = float(np.mean(pred == y_test))
    if is_chief:
        log("accuracy: %.4f" % acc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
