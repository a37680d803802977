"""Digits classifier trained with distributed XGBoost (examples/xgboostjob.yaml).

Every replica runs this script. The XGBoostJob controller injects MASTER_ADDR, MASTER_PORT,
WORLD_SIZE and RANK (master-0 is rank 0, worker-i is rank i+1). Rank 0 starts the Rabit tracker,
listening on MASTER_ADDR:MASTER_PORT (that port is the master's; nothing else binds it); every rank,
rank 0 included, then joins the collective through the tracker, loads its shard of the training
rows (rank-strided: rows rank, rank+WORLD_SIZE, ...), and trains with xgb.train. Histograms are
all-reduced every boosting round, so all ranks build the same trees; rank 0 prints the accuracy
on the held-out split. One "epoch" line below is one boosting round.

Without WORLD_SIZE (or WORLD_SIZE=1) it trains alone on all rows.

Environment: MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK (injected); ROUNDS (default 100).
"""

import os
import socket
import sys
import time

import numpy as np
import xgboost as xgb
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from xgboost import collective
from xgboost.tracker import RabitTracker

SEED = 42
ROUNDS = int(os.environ.get("ROUNDS", "100"))
# Seconds: how long the tracker waits for all ranks to connect, and the bound on one collective op.
TRACKER_TIMEOUT_S = 300
COLLECTIVE_TIMEOUT_S = 120


def log(msg):
    print(msg, flush=True)


class Progress(xgb.callback.TrainingCallback):
    def __init__(self):
        self.t0 = time.monotonic()

    def after_iteration(self, model, epoch, evals_log):
        loss = evals_log["train"]["mlogloss"][-1]
        log("epoch %d/%d loss=%.4f (%.1fs)" % (epoch + 1, ROUNDS, loss, time.monotonic() - self.t0))
        return False  # do not stop


def train(rank, world):
    digits = load_digits()
    x = (digits.data / 16.0).astype("float32")
    y = digits.target
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.25, random_state=SEED, stratify=y)
    x_shard, y_shard = x_train[rank::world], y_train[rank::world]
    log("rank %d/%d: training on %d of %d rows" % (rank, world, len(x_shard), len(x_train)))

    dtrain = xgb.DMatrix(x_shard, label=y_shard)
    params = {
        "objective": "multi:softprob",
        "num_class": 10,
        "eval_metric": "mlogloss",
        "tree_method": "hist",
        "max_depth": 4,
        "eta": 0.3,
        "nthread": 1,
        "seed": SEED,
    }
    booster = xgb.train(params, dtrain, num_boost_round=ROUNDS, evals=[(dtrain, "train")], verbose_eval=False, callbacks=[Progress()])
    return booster, x_test, y_test


def report(booster, x_test, y_test):
    # Called outside the communicator: building a DMatrix is itself a collective operation
    # while the communicator is up, so evaluating on rank 0 alone there would fail.
    pred = np.argmax(booster.predict(xgb.DMatrix(x_test)), axis=1)
    log("accuracy: %.4f" % float(np.mean(pred == y_test)))


def main():
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world <= 1:
        report(*train(0, 1))
        return 0

    # On Kubernetes MASTER_ADDR is the master's Service name; the tracker needs an IP to bind.
    addr = socket.gethostbyname(os.environ["MASTER_ADDR"])
    port = int(os.environ["MASTER_PORT"])
    tracker = None
    if rank == 0:
        tracker = RabitTracker(n_workers=world, host_ip=addr, port=port, sortby="task", timeout=TRACKER_TIMEOUT_S)
        tracker.start()
        log("rank 0: tracker listening on %s:%d for %d workers" % (addr, port, world))

    comm_args = {
        "dmlc_communicator": "rabit",
        "dmlc_tracker_uri": addr,
        "dmlc_tracker_port": port,
        "dmlc_task_id": str(rank),  # sortby="task": collective rank == RANK
        "dmlc_retry": 8,  # connect retries, sleeping 2, 4, ... 16 s: ~70 s for the tracker to come up
        "dmlc_timeout": COLLECTIVE_TIMEOUT_S,
    }
    with collective.CommunicatorContext(**comm_args):
        if collective.get_rank() != rank:
            raise RuntimeError("collective rank %d != RANK %d" % (collective.get_rank(), rank))
        result = train(rank, world)
    if tracker is not None:
        tracker.wait_for(TRACKER_TIMEOUT_S)
    if rank == 0:
        report(*result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
