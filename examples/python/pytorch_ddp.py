"""Digits classifier trained with PyTorch DistributedDataParallel over gloo (examples/pytorchjob-ddp.yaml).

Every replica runs this script. The PyTorchJob controller injects MASTER_ADDR, MASTER_PORT,
WORLD_SIZE and RANK (master-0 is rank 0, worker-i is rank i+1); init_process_group("gloo") reads
them (env://): rank 0 hosts the rendezvous store on MASTER_PORT, the others connect to it. Each
rank trains on its DistributedSampler shard; DDP all-reduces the gradients every step, so the
replicas stay identical; rank 0 prints the accuracy on the held-out split.

If a rank dies, the others' next all-reduce fails (gloo) and they exit non-zero; with
restartPolicy OnFailure the replicas are restarted and training starts over (no checkpoint: it is
a few seconds of work). Without WORLD_SIZE (or WORLD_SIZE=1) it trains alone, without DDP.

torch is not in the examples' venv (PyPI's torch carries its CUDA libraries, about 5 GB); it has
a venv of its own, with scikit-learn: PATH="$(scripts/python-env torch):$PATH".

Environment: MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK (injected); EPOCHS (default 20).
"""

import os
import sys
import time
from datetime import timedelta

try:
    import torch
except ImportError:
    print("torch is not installed; pip install torch", file=sys.stderr, flush=True)
    sys.exit(1)

import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

SEED = 42
EPOCHS = int(os.environ.get("EPOCHS", "20"))
BATCH_PER_RANK = 32
# Bound on rendezvous and on every collective: a peer that is gone fails the job instead of hanging it.
COLLECTIVE_TIMEOUT = timedelta(seconds=120)


def log(msg):
    # One write per line: torch.distributed.launch and torchrun may start several processes that
    # share the replica's output, and print() writes the text and its newline separately.
    sys.stdout.write(msg + "\n")
    sys.stdout.flush()


def load_data():
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = (digits.data / 16.0).astype("float32")
    y = digits.target.astype("int64")
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.25, random_state=SEED, stratify=y)
    return (torch.from_numpy(x_train), torch.from_numpy(y_train), torch.from_numpy(x_test), torch.from_numpy(y_test))


def train_epoch(model, sampler, loader, optimizer, loss_fn, epoch, epochs, distributed, t0):
    """Epoch `epoch` (from 0) of `epochs` over this rank's shard; logs the mean loss over all
    ranks' batches."""
    sampler.set_epoch(epoch)
    model.train()
    total = torch.zeros(2)  # [sum of losses, number of batches]
    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()  # DDP all-reduces (averages) the gradients here
        optimizer.step()
        total += torch.tensor([loss.item(), 1.0])
    if distributed:
        dist.all_reduce(total)
    log("epoch %d/%d loss=%.4f (%.1fs)" % (epoch + 1, epochs, (total[0] / total[1]).item(), time.monotonic() - t0))


def main():
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    distributed = world > 1
    torch.set_num_threads(1)
    torch.manual_seed(SEED)

    if distributed:
        # env:// reads MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE.
        dist.init_process_group("gloo", init_method="env://", timeout=COLLECTIVE_TIMEOUT)
        log("rank %d/%d: joined the process group at %s:%s" % (rank, world, os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"]))

    x_train, y_train, x_test, y_test = load_data()
    train_set = TensorDataset(x_train, y_train)
    sampler = DistributedSampler(train_set, num_replicas=world, rank=rank, shuffle=True, seed=SEED, drop_last=True)
    loader = DataLoader(train_set, batch_size=BATCH_PER_RANK, sampler=sampler)

    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))
    if distributed:
        model = DistributedDataParallel(model)  # broadcasts rank 0's initial weights to all ranks
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3 * world)
    loss_fn = nn.CrossEntropyLoss()

    t0 = time.monotonic()
    for epoch in range(EPOCHS):
        train_epoch(model, sampler, loader, optimizer, loss_fn, epoch, EPOCHS, distributed, t0)

    if rank == 0:
        net = model.module if distributed else model  # plain module: no collective in this forward pass
        net.eval()
        with torch.no_grad():
            pred = net(x_test).argmax(dim=1)
        log("accuracy: %.4f" % (pred == y_test).float().mean().item())

    if distributed:
        dist.barrier()  # nobody tears down the store (rank 0) while others still use it
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
