"""Linear regression with MXNet's parameter server (ps-lite, kvstore ``dist_sync``).

Every replica of examples/mxjob-dist.yaml runs this file. What a replica is comes from the
environment the MXJob gives it (``DMLC_ROLE``, ``DMLC_PS_ROOT_URI``/``DMLC_PS_ROOT_PORT``,
``DMLC_NUM_SERVER``, ``DMLC_NUM_WORKER``):

- the scheduler and the servers never get past ``import mxnet``: MXNet runs them inside the
  import, until the workers are done, and then exits 0;
- each worker makes its own shard of a synthetic data set ``y = X·w + b + noise`` (seeded by its
  rank, so nothing is downloaded), and trains a one-unit ``gluon.nn.Dense`` on it with SGD;
  ``dist_sync`` sums the workers' gradients on the servers at every step, so both workers hold the
  same weights throughout.

Each worker prints its ps-lite rank (which ps-lite hands out as nodes register, so it need not be
the replica's index, ``DMLC_WORKER_ID``), ``initial loss=…`` (all weights zero), one
``epoch N/M loss=…`` line per epoch, the weights it learned next to the true ones, and ends with
``loss: <initial> -> <final>`` over its whole shard.
"""

import os
import sys

ROLE = os.environ.get("DMLC_ROLE", "worker")
print(f"{ROLE}: MX_CONFIG={os.environ.get('MX_CONFIG', '')}", flush=True)

try:
    import mxnet as mx  # a scheduler or server serves inside this import, then exits
except ImportError:
    sys.exit("mxnet is not installed: PATH=\"$(scripts/python-env mxnet):$PATH\" (Python 3.9)")

import numpy as np
from mxnet import autograd, gluon

TRUE_WEIGHTS = [2.0, -3.4]
TRUE_BIAS = 4.2
SAMPLES_PER_WORKER = 1000
BATCH_SIZE = 50
EPOCHS = 5
LEARNING_RATE = 0.1


def shard(rank):
    """This worker's rows of the data set: its own seed, the same true weights."""
    rng = np.random.default_rng(rank)
    features = rng.normal(size=(SAMPLES_PER_WORKER, len(TRUE_WEIGHTS))).astype("float32")
    noise = 0.01 * rng.normal(size=SAMPLES_PER_WORKER)
    labels = (features @ np.array(TRUE_WEIGHTS) + TRUE_BIAS + noise).astype("float32")
    return mx.nd.array(features), mx.nd.array(labels)


def mean_loss(net, loss, features, labels):
    """The L2 loss over the whole shard."""
    return loss(net(features), labels).mean().asscalar()


def main():
    kvstore = mx.kv.create("dist_sync")
    rank, workers = kvstore.rank, kvstore.num_workers
    replica = os.environ.get("DMLC_WORKER_ID")
    print(f"worker {rank} of {workers} (DMLC_WORKER_ID={replica})", flush=True)
    features, labels = shard(rank)
    data = gluon.data.DataLoader(
        gluon.data.ArrayDataset(features, labels), batch_size=BATCH_SIZE, shuffle=True
    )
    net = gluon.nn.Dense(1)
    net.initialize(mx.init.Zero())
    trainer = gluon.Trainer(
        net.collect_params(), "sgd", {"learning_rate": LEARNING_RATE}, kvstore=kvstore
    )
    loss = gluon.loss.L2Loss()
    initial = mean_loss(net, loss, features, labels)
    print(f"initial loss={initial:.6f}", flush=True)
    for epoch in range(1, EPOCHS + 1):
        total = 0.0
        for batch_features, batch_labels in data:
            with autograd.record():
                batch_loss = loss(net(batch_features), batch_labels)
            batch_loss.backward()
            # The servers sum the workers' gradients: normalize by the global batch.
            trainer.step(BATCH_SIZE * workers)
            total += batch_loss.mean().asscalar()
        print(f"epoch {epoch}/{EPOCHS} loss={total / len(data):.6f}", flush=True)
    final = mean_loss(net, loss, features, labels)
    weights = [round(float(weight), 4) for weight in net.weight.data().asnumpy().ravel()]
    bias = round(float(net.bias.data().asnumpy()[0]), 4)
    print(f"weights={weights} bias={bias} (true: {TRUE_WEIGHTS} {TRUE_BIAS})", flush=True)
    print(f"loss: {initial:.6f} -> {final:.6f}", flush=True)


if __name__ == "__main__":
    main()
