"""Digits classifier trained by an elastic PyTorchJob under torchrun (examples/pytorchjob-elastic.yaml).

Every Worker replica runs `torchrun examples/python/pytorch_elastic.py`. The PyTorchJob controller
gives torchrun its configuration as PET_* variables: PET_NNODES=min:max (elasticPolicy's
minReplicas:maxReplicas), PET_RDZV_BACKEND=c10d and PET_RDZV_ENDPOINT (worker-0 hosts the
rendezvous store), PET_MAX_RESTARTS (elasticPolicy.maxRestarts), PET_NPROC_PER_NODE. torchrun
rendezvouses the nodes that are there (at least min, at most max), starts this script with RANK,
WORLD_SIZE and MASTER_ADDR/PORT of that round, and starts a new round when a member fails or a
node arrives: every worker process is restarted, with the new WORLD_SIZE.

Elastic training must survive those restarts: rank 0 checkpoints the model and the optimizer after
every epoch (to CHECKPOINT_DIR, default <tmp>/trainctl-examples/<JOB_NAME>-checkpoint, written
atomically), and every round resumes from the last checkpoint. Each round prints one line,
`round R: world W, resuming at epoch E`, then one `epoch N/M loss=...` line per epoch; rank 0 ends
with `accuracy: 0.9...` on the held-out split.

Environment: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RESTART_COUNT (torchrun's);
JOB_NAME, CHECKPOINT_DIR, EPOCHS (default 30).
"""

import os
import sys
import tempfile
import time
from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

from pytorch_ddp import SEED, load_data, log, train_epoch

EPOCHS = int(os.environ.get("EPOCHS", "30"))
BATCH_PER_RANK = 32
# A peer that is gone fails the collective instead of hanging it.
COLLECTIVE_TIMEOUT = timedelta(seconds=60)


def checkpoint_path():
    job = os.environ.get("JOB_NAME", "digits-elastic")
    default = os.path.join(tempfile.gettempdir(), "trainctl-examples", job + "-checkpoint")
    directory = os.environ.get("CHECKPOINT_DIR", default)
    os.makedirs(directory, exist_ok=True)
    return os.path.join(directory, "checkpoint.pt")


def save(path, model, optimizer, epoch):
    partial = path + ".partial"
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}, partial)
    os.replace(partial, path)


def main():
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    torch.set_num_threads(1)
    torch.manual_seed(SEED)
    dist.init_process_group("gloo", init_method="env://", timeout=COLLECTIVE_TIMEOUT)

    x_train, y_train, x_test, y_test = load_data()
    train_set = TensorDataset(x_train, y_train)
    sampler = DistributedSampler(train_set, num_replicas=world, rank=rank, shuffle=True, seed=SEED, drop_last=True)
    loader = DataLoader(train_set, batch_size=BATCH_PER_RANK, sampler=sampler)

    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    path = checkpoint_path()
    start = 0
    if os.path.exists(path):
        state = torch.load(path)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start = state["epoch"]
    log("round %d: world %d, resuming at epoch %d" % (restart, world, start + 1))
    model = DistributedDataParallel(model)  # every rank starts from rank 0's weights
    loss_fn = nn.CrossEntropyLoss()

    t0 = time.monotonic()
    for epoch in range(start, EPOCHS):
        train_epoch(model, sampler, loader, optimizer, loss_fn, epoch, EPOCHS, True, t0)
        if rank == 0:
            save(path, model.module, optimizer, epoch + 1)
        # Nobody starts the next epoch (or ends) before the checkpoint is written.
        dist.barrier()

    if rank == 0:
        net = model.module
        net.eval()
        with torch.no_grad():
            pred = net(x_test).argmax(dim=1)
        log("accuracy: %.4f" % (pred == y_test).float().mean().item())
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
