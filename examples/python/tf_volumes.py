"""Digits classifier whose settings, data and outputs live in volumes (examples/tfjob-volumes.yaml).

The job mounts what a cluster job would, at the same paths:
  /etc/config   ConfigMap digits-settings: config.yaml (flat `key: value` lines: epochs, batch_size,
                learning_rate)
  /data         claim digits-data: digits.npz, written here by the first replica that finds it missing
                (the digits set ships with scikit-learn; a real job would find its dataset there)
  /output       claim digits-model: the trained model (digits.keras), written by the chief
  /logs         claim digits-logs: TensorBoard event files, one run directory per job
                (<JOB_NAME>/train, <JOB_NAME>/validation), written by the chief

Every replica (chief-0, worker-0) runs this script under MultiWorkerMirroredStrategy (TF_CONFIG from
the TFJob controller). Locally, `trainctl run` mounts the claims from its state directory (or from the
directories `--volume CLAIM=PATH` binds), the ConfigMap from the manifest, in a mount namespace per
replica: nothing is written to the machine's /data, /output or /logs.

Environment:
  TF_CONFIG           injected by the TFJob controller
  JOB_NAME            the job's name (the manifest sets it from the job-name label)
  TF_USE_LEGACY_KERAS must be 1 (tf-keras / Keras 2; Keras 3's fit fails under MWMS)
"""

import json
import os
import sys
import tempfile

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

SEED = 42
CONFIG = "/etc/config/config.yaml"
DATA = "/data/digits.npz"


def log(msg):
    print(msg, flush=True)


def settings():
    """The ConfigMap's flat `key: value` lines, as numbers."""
    values = {}
    with open(CONFIG) as config:
        for line in config:
            key, sep, value = line.partition(":")
            if sep and not line.lstrip().startswith("#"):
                values[key.strip()] = float(value.strip())
    return int(values["epochs"]), int(values["batch_size"]), values["learning_rate"]


def dataset():
    """The digits from the data claim, put there first if missing (atomically: replicas race)."""
    if not os.path.exists(DATA):
        digits = load_digits()
        fd, partial = tempfile.mkstemp(dir=os.path.dirname(DATA), suffix=".npz")
        with os.fdopen(fd, "wb") as out:
            np.savez(out, x=(digits.data / 16.0).astype("float32"), y=digits.target.astype("int64"))
        os.replace(partial, DATA)
        log("wrote %s" % DATA)
    with np.load(DATA) as data:
        return data["x"], data["y"]


def main():
    tf_config = json.loads(os.environ.get("TF_CONFIG", "{}"))
    task = tf_config.get("task", {"type": "chief", "index": 0})
    is_chief = task["type"] == "chief"
    me = "%s-%d" % (task["type"], task["index"])
    job_name = os.environ.get("JOB_NAME") or "digits-volumes"

    epochs, batch_per_replica, learning_rate = settings()
    log("%s: epochs=%d batch_size=%d learning_rate=%g (from %s)" % (me, epochs, batch_per_replica, learning_rate, CONFIG))

    tf.keras.utils.set_random_seed(SEED)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.config.threading.set_intra_op_parallelism_threads(1)
    strategy = tf.distribute.MultiWorkerMirroredStrategy(
        communication_options=tf.distribute.experimental.CommunicationOptions(
            implementation=tf.distribute.experimental.CommunicationImplementation.RING,
            timeout_seconds=60,
        )
    )
    n = strategy.num_replicas_in_sync

    x, y = dataset()
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.25, random_state=SEED, stratify=y)
    global_batch = batch_per_replica * n
    ds = tf.data.Dataset.from_tensor_slices((x_train, y_train)).shuffle(len(x_train), seed=SEED).repeat().batch(global_batch)
    opts = tf.data.Options()
    opts.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    ds = ds.with_options(opts)
    validation = tf.data.Dataset.from_tensor_slices((x_test, y_test)).batch(global_batch).with_options(opts)

    with strategy.scope():
        model = tf.keras.Sequential(
            [
                tf.keras.layers.Input(shape=(64,)),
                tf.keras.layers.Dense(128, activation="relu"),
                tf.keras.layers.Dense(10),
            ]
        )
        model.compile(
            optimizer=tf.keras.optimizers.Adam(learning_rate * n),
            loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
        )

    # Under MWMS every replica writes summaries; only the chief's go to the logs claim.
    log_dir = os.path.join("/logs", job_name) if is_chief else tempfile.mkdtemp(prefix="tb-" + me + "-")

    class Progress(tf.keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            logs = logs or {}
            log("epoch %d/%d loss=%.4f acc=%.4f" % (epoch + 1, epochs, logs.get("loss", float("nan")), logs.get("accuracy", float("nan"))))

    model.fit(
        ds,
        epochs=epochs,
        steps_per_epoch=len(x_train) // global_batch,
        validation_data=validation,
        verbose=0,
        callbacks=[tf.keras.callbacks.TensorBoard(log_dir=log_dir, update_freq="epoch"), Progress()],
    )

    pred = np.argmax(model(x_test, training=False).numpy(), axis=1)
    acc = float(np.mean(pred == y_test))
    # Saving is collective under MWMS: every replica saves, only the chief's copy is kept.
    path = "/output/digits.keras" if is_chief else os.path.join(tempfile.mkdtemp(prefix="model-" + me + "-"), "digits.keras")
    model.save(path)
    if is_chief:
        log("saved %s, TensorBoard logs in %s" % (path, log_dir))
        log("accuracy: %.4f" % acc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
