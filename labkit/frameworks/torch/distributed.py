"""One PyTorch data-parallel worker: DistributedSampler + DistributedDataParallel.

Started by ``torchrun`` (:mod:`labkit.frameworks.torch.launch`), which sets ``RANK``,
``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR`` and ``MASTER_PORT`` for each process. Without
them (``Job.single``) it trains as one plain process: no process group, no DDP, the reference.

What PyTorch asks you to write, in order:

1. ``dist.init_process_group(backend)``: NCCL when CUDA is there, gloo on CPUs;
2. a ``DistributedSampler`` so that each rank reads its own shard of the data set;
3. ``DistributedDataParallel(model)``: it broadcasts rank 0's weights at construction and
   all-reduces (averages) the gradients during ``backward()``; the optimizer is unchanged.

Run as ``python -m labkit.frameworks.torch.distributed --out DIR ...`` (``--help``).
"""

from __future__ import annotations

import contextlib
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler

from ... import resnet
from ...util import stats
from .._kit import worker
from . import SPEC

__all__ = ["SyntheticImages", "TinyNet", "build_model", "main", "measure", "train", "weights_of"]


class SyntheticImages(worker.SyntheticImages, Dataset):
    """The synthetic data set as a ``Dataset`` of tensors; sample i is the same in every process."""

    def __getitem__(self, i: int):
        x, y = super().__getitem__(i)
        return torch.from_numpy(x), y


class TinyNet(nn.Module):
    """A small CNN without BatchNorm: 3x3 conv (16), ReLU, 3x3 conv (32), ReLU, average, linear."""

    def __init__(self, num_classes: int = worker.TINY_CLASSES):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.fc = nn.Linear(32, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.conv2(F.relu(self.conv1(x))))
        return self.fc(x.mean(dim=(2, 3)))


def build_model(name: str, seed: int, width: int = resnet.WIDTH) -> nn.Module:
    """ResNet-50 from the canonical weights (the adapter's) or the seeded TinyNet."""
    if name == "resnet50":
        from . import adapter

        return adapter.build_resnet50(resnet.init_weights(seed, width=width)).train()
    torch.manual_seed(seed)
    return TinyNet().train()


def weights_of(model: nn.Module, name: str) -> dict[str, np.ndarray]:
    if name == "resnet50":
        from . import adapter

        return adapter.to_canonical(model)
    return {k: v.detach().cpu().numpy().copy() for k, v in model.state_dict().items()}


def main() -> None:
    args = worker.start(SPEC)
    launched = "RANK" in os.environ
    rank = int(os.environ.get("RANK", "0"))
    worker.run_worker(SPEC.name, rank, lambda: train(args, launched, rank), args.out)


def train(args, launched: bool, rank: int) -> None:
    if args.threads:
        torch.set_num_threads(args.threads)
    cuda = torch.cuda.is_available()
    device = torch.device(f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}" if cuda else "cpu")
    backend = "nccl" if cuda else "gloo"
    if cuda:
        torch.cuda.set_device(device)
    t0 = time.perf_counter()
    if launched:
        dist.init_process_group(backend)  # rank, world size, address: from torchrun's variables
    world = dist.get_world_size() if launched else 1
    init_s = time.perf_counter() - t0

    model = build_model(args.model, args.seed, args.width).to(device)
    num_classes = model.fc.out_features
    data = SyntheticImages(args.steps * args.batch * world, args.image_size, args.seed, num_classes)
    sampler = DistributedSampler(data, shuffle=False) if launched else None
    loader = DataLoader(data, batch_size=args.batch, sampler=sampler, shuffle=False)
    net = DDP(model) if launched else model  # broadcasts rank 0's weights to every rank
    opt = torch.optim.SGD(net.parameters(), lr=args.lr, momentum=args.momentum)

    steps = worker.Steps(args, rank)
    for x, y in loader:
        seen = float(x.double().sum())  # which images this worker saw
        x, y = x.to(device), y.to(device)
        started = steps.begin(seen)
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(net(x), y)
        loss.backward()  # DDP: gradients are averaged across ranks here
        opt.step()
        if cuda:
            torch.cuda.synchronize()
        steps.end(float(loss.item()), started)
    weights = weights_of(model, args.model)  # before the timing passes below touch BatchNorm

    params = sum(p.numel() for p in model.parameters())
    result = worker.result_fields(
        steps,
        framework=SPEC.name,
        version=torch.__version__,
        world=world,
        launcher="torchrun" if launched else "single process",
        backend=backend if launched else "",
        device=str(device),
        threads=torch.get_num_threads(),
        parameters=params,
        init_s=init_s,
    )
    if args.measure:
        result.update(measure(net, model, loader, device, args.measure, launched, cuda))
    if launched:
        dist.barrier()
        dist.destroy_process_group()
    worker.write_result(args.out, rank, result, weights)


def measure(net, model, loader, device, repeats: int, launched: bool, cuda: bool) -> dict:
    """Split a step: forward+backward alone (DDP's ``no_sync``: no all-reduce) and one all-reduce
    of a gradient-sized buffer alone. Weights are not updated (no optimizer step)."""
    x, y = next(iter(loader))
    x, y = x.to(device), y.to(device)

    def sync():
        if cuda:
            torch.cuda.synchronize()

    compute = []
    for _ in range(repeats):
        net.zero_grad(set_to_none=True)
        start = time.perf_counter()
        with net.no_sync() if launched else contextlib.nullcontext():
            F.cross_entropy(net(x), y).backward()
        sync()
        compute.append(time.perf_counter() - start)
    net.zero_grad(set_to_none=True)
    out = {"compute_s": stats.median(compute)}
    if launched:
        flat = torch.zeros(sum(p.numel() for p in model.parameters()), device=device)
        reduce = []
        for _ in range(repeats):
            dist.barrier()
            start = time.perf_counter()
            dist.all_reduce(flat)
            sync()
            reduce.append(time.perf_counter() - start)
        out["allreduce_s"] = stats.median(reduce)
    return out


if __name__ == "__main__":
    main()
