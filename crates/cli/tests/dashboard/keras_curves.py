"""A small Keras fit whose TensorBoard callback writes its curves where trainctl offers
(TRAINCTL_TENSORBOARD_DIR): the curves page's browser test draws them. EPOCHS epochs, with
validation data, so that the `train` and `validation` runs each have EPOCHS points of
`epoch_loss`."""

import os

import numpy as np
import tensorflow as tf

EPOCHS = int(os.environ.get("EPOCHS", "6"))

rng = np.random.default_rng(7)
features = rng.normal(size=(256, 8)).astype("float32")
labels = (features.sum(axis=1, keepdims=True) > 0).astype("float32")
model = tf.keras.Sequential(
    [tf.keras.Input(shape=(8,)), tf.keras.layers.Dense(8, activation="relu"), tf.keras.layers.Dense(1, activation="sigmoid")]
)
model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
board = tf.keras.callbacks.TensorBoard(log_dir=os.environ["TRAINCTL_TENSORBOARD_DIR"])
model.fit(
    features[:192],
    labels[:192],
    validation_data=(features[192:], labels[192:]),
    epochs=EPOCHS,
    batch_size=32,
    verbose=2,
    callbacks=[board],
)
