"""Writes event files with real TensorFlow for crates/events/tests/tensorflow.rs.

Usage: write_events.py LOG_DIR STEPS

Under LOG_DIR:
- summaries/train, summaries/validation: tf.summary.scalar (TensorFlow 2) of `loss` and
  `accuracy` for steps 0..STEPS; train loss = 1 / (step + 1), validation loss = 2 / (step + 1),
  accuracy = step / STEPS, plus a histogram and an image (not scalars) per step in train.
- summaries/v1: one TensorFlow 1 style value (`simple_value`) per step, tag `v1_loss`,
  value 3 / (step + 1), written as a raw Summary protocol buffer.
- keras/train, keras/validation: what Keras' TensorBoard callback writes during a small fit.

Prints the fit's history on stdout, one line per metric: its name then one value per epoch,
separated by spaces (`loss 0.39 0.38 0.37`, then `val_loss ...`).
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def write_summaries(log_dir, steps):
    train = tf.summary.create_file_writer(os.path.join(log_dir, "summaries", "train"))
    validation = tf.summary.create_file_writer(os.path.join(log_dir, "summaries", "validation"))
    for step in range(steps):
        with train.as_default(step=step):
            tf.summary.scalar("loss", 1.0 / (step + 1))
            tf.summary.scalar("accuracy", step / steps)
            tf.summary.histogram("weights", tf.random.normal([100]))
            tf.summary.image("sample", tf.zeros([1, 4, 4, 1]))
        with validation.as_default(step=step):
            tf.summary.scalar("loss", 2.0 / (step + 1))
            tf.summary.scalar("accuracy", step / steps)
    train.close()
    validation.close()


def write_v1(log_dir, steps):
    writer = tf.summary.create_file_writer(os.path.join(log_dir, "summaries", "v1"))
    with writer.as_default():
        for step in range(steps):
            summary = tf.compat.v1.Summary(
                value=[tf.compat.v1.Summary.Value(tag="v1_loss", simple_value=3.0 / (step + 1))]
            )
            tf.summary.experimental.write_raw_pb(summary.SerializeToString(), step=step)
    writer.close()


def fit_keras(log_dir):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 4)).astype("float32")
    y = (x.sum(axis=1) > 0).astype("float32")
    model = tf.keras.Sequential(
        [tf.keras.Input(shape=(4,)), tf.keras.layers.Dense(1, activation="sigmoid")]
    )
    model.compile(optimizer="sgd", loss="binary_crossentropy", metrics=["accuracy"])
    history = model.fit(
        x,
        y,
        epochs=3,
        batch_size=16,
        validation_split=0.25,
        verbose=0,
        callbacks=[tf.keras.callbacks.TensorBoard(log_dir=os.path.join(log_dir, "keras"))],
    )
    return history.history


def main():
    log_dir, steps = sys.argv[1], int(sys.argv[2])
    write_summaries(log_dir, steps)
    write_v1(log_dir, steps)
    history = fit_keras(log_dir)
    for metric in ("loss", "val_loss"):
        print(metric, *(repr(value) for value in history[metric]))


if __name__ == "__main__":
    main()
