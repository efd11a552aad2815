"""One PyTorch data-parallel worker: DistributedSampler + DistributedDataParallel (or FSDP).

Started by ``torchrun`` (:mod:`labkit.frameworks.torch.launch`), which sets ``RANK``,
``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR`` and ``MASTER_PORT`` for each process. Without
them (``Job.single``) it trains as one plain process: no process group, no DDP, the reference.

What PyTorch asks you to write, in order:

1. ``dist.init_process_group(backend)``: NCCL when CUDA is there, gloo on CPUs;
2. a ``DistributedSampler`` so that each rank reads its own shard of the data set;
3. ``DistributedDataParallel(model)``: it broadcasts rank 0's weights at construction and
   all-reduces (averages) the gradients during ``backward()``; the optimizer is unchanged.

For large models, as far as a CPU shows it (:func:`wrap`): ``--strategy fsdp`` shards
parameters, gradients and optimizer state over the workers (``fully_shard``, FSDP2), and each
worker reports the bytes it holds of them (:func:`held_bytes`); ``--comm-hook powersgd``
compresses DDP's gradient all-reduce (:func:`powersgd_traffic`: the bytes it sent). Fault
recovery: with ``--checkpoint FILE`` rank 0 saves the whole state after every step and a
worker that starts again (torchrun ``--max-restarts``, which restarts every worker when one
dies) resumes from it (:func:`save_checkpoint`, :func:`load_checkpoint`).

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
    """The model's whole weights on every worker (FSDP's shards gathered)."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    full = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))
    state = {k: v.detach().cpu().numpy().copy() for k, v in full.items()}
    if name == "resnet50":
        num_classes, width = state["fc.bias"].shape[0], state["conv1.weight"].shape[0]
        return {k: state[k] for k in resnet.param_shapes(num_classes, width)}
    return state


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
    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))  # torchrun's restarts
    t0 = time.perf_counter()
    if launched:
        join_process_group(backend, attempt)
    world = dist.get_world_size() if launched else 1
    init_s = time.perf_counter() - t0

    model = build_model(args.model, args.seed, args.width).to(device)
    num_classes = model.fc.out_features
    data = SyntheticImages(args.steps * args.batch * world, args.image_size, args.seed, num_classes)
    sampler = DistributedSampler(data, shuffle=False) if launched else None
    loader = DataLoader(data, batch_size=args.batch, sampler=sampler, shuffle=False)
    net, hook = wrap(model, args, launched)
    opt = torch.optim.SGD(net.parameters(), lr=args.lr, momentum=args.momentum)

    steps = worker.Steps(args, rank, attempt)
    if args.checkpoint and os.path.exists(args.checkpoint):
        steps.resume(load_checkpoint(args.checkpoint, model, opt))
    for i, (x, y) in enumerate(loader):
        if i < steps.resumed_from:  # done before the restart: the checkpoint holds its update
            continue
        seen = float(x.double().sum())  # which images this worker saw
        x, y = x.to(device), y.to(device)
        started = steps.begin(seen)
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(net(x), y)
        loss.backward()  # DDP: gradients are averaged across ranks here; FSDP: reduce-scattered
        opt.step()
        if cuda:
            torch.cuda.synchronize()
        steps.end(float(loss.item()), started)
        if args.checkpoint:
            save_checkpoint(args.checkpoint, model, opt, steps.losses, rank, launched)
    weights = weights_of(model, args.model)  # before the timing passes below touch BatchNorm

    params = sum(p.numel() for p in model.parameters())  # the whole model's, sharded or not
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
        strategy=args.strategy,
        **held_bytes(model, opt),
        **({} if hook is None else powersgd_traffic(hook, model, len(steps.step_s))),
    )
    if args.measure:
        result.update(measure(net, model, loader, device, args.measure, launched, cuda))
    if launched:
        dist.barrier()
        dist.destroy_process_group()
    worker.write_result(args.out, rank, result, weights)


def join_process_group(backend: str, attempt: int) -> None:
    """``dist.init_process_group`` at torchrun's store (``MASTER_ADDR``, ``MASTER_PORT``, rank
    and world size from its variables), under a key prefix of this attempt's own.

    torchrun keeps one store for the whole job and a restarted group meets there again; without
    a prefix a worker of the new attempt can read the address a dead worker of the last one
    left under the same key, and fail to connect (gloo: "connectFullMesh failed ... Connection
    refused"). A plain ``init_process_group(backend)`` is the same without the prefix."""
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    store = dist.TCPStore(
        os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), world, is_master=False
    )
    prefixed = dist.PrefixStore(f"labkit/attempt{attempt}", store)
    dist.init_process_group(backend, store=prefixed, rank=rank, world_size=world)


# --------------------------------------------------------------------------------------------
# How the workers hold the model: replicas (DDP, with an optional PowerSGD hook) or shards (FSDP)


def wrap(model: nn.Module, args, launched: bool) -> tuple[nn.Module, object | None]:
    """``model`` as the job's strategy runs it, and the PowerSGD state when that hook is on.

    ``ddp``: ``DistributedDataParallel`` (every worker a replica; rank 0's weights broadcast).
    ``fsdp``: ``torch.distributed.fsdp.fully_shard`` (FSDP2) on each block, then on the whole
    model: each worker keeps 1/world of every parameter, of its gradient and of the optimizer
    state (the optimizer is built on the sharded parameters), and gathers a block's full
    parameters just before it computes (all-gather), its gradients reduce-scattered after.
    ``--comm-hook powersgd`` (DDP only): ``powerSGD_hook`` all-reduces, for each gradient
    matrix, two rank-r factors P and Q instead of the matrix, with error feedback; the first
    two steps are plain all-reduces (the hook's minimum with error feedback). Its gradient is
    one DDP bucket: the hook chains its all-reduces in callbacks, and on gloo those of several
    buckets interleave differently on each rank (a collective mismatch that aborts the job).
    """
    if not launched:
        return model, None
    if args.strategy == "fsdp":
        from torch.distributed.fsdp import fully_shard

        for unit in _units(model):
            fully_shard(unit)
        return fully_shard(model), None
    if args.comm_hook != "powersgd":
        return DDP(model), None
    from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powersgd

    whole_mb = sum(p.numel() * p.element_size() for p in model.parameters()) / 2**20
    net = DDP(model, bucket_cap_mb=whole_mb + 1)

    state = powersgd.PowerSGDState(
        process_group=None,
        matrix_approximation_rank=args.powersgd_rank,
        start_powerSGD_iter=POWERSGD_START,
    )
    net.register_comm_hook(state, powersgd.powerSGD_hook)
    return net, state


#: steps of plain all-reduce before PowerSGD compresses (the hook's minimum with error feedback)
POWERSGD_START = 2


def _units(model: nn.Module) -> list[nn.Module]:
    """The modules FSDP shards one by one: ResNet-50's bottlenecks, or TinyNet's layers."""
    from .adapter import Bottleneck

    blocks = [m for m in model.modules() if isinstance(m, Bottleneck)]
    return blocks or [m for m in model.children() if any(True for _ in m.parameters())]


def held_bytes(model: nn.Module, opt: torch.optim.Optimizer) -> dict[str, int]:
    """Bytes this worker holds of the parameters, their gradients and the optimizer state
    (the local shard of each sharded tensor), read from the tensors after training."""

    def nbytes(tensors) -> int:
        local = [t.to_local() if hasattr(t, "to_local") else t for t in tensors]
        return int(sum(t.numel() * t.element_size() for t in local))

    params = list(model.parameters())
    state = [v for s in opt.state.values() for v in s.values() if torch.is_tensor(v)]
    return {
        "param_bytes": nbytes(params),
        "grad_bytes": nbytes(p.grad for p in params if p.grad is not None),
        "optimizer_bytes": nbytes(state),
    }


def powersgd_traffic(state, model: nn.Module, steps: int) -> dict:
    """What PowerSGD sent per compressed step against a plain all-reduce, in bytes, from the
    hook's own counters (elements of the matrices it compressed, before and after), over the
    steps after :data:`POWERSGD_START`; tensors it left uncompressed (biases, small matrices)
    are all-reduced as they are."""
    total = sum(p.numel() for p in model.parameters())
    compressed_steps = max(steps - POWERSGD_START, 0)
    _, before, after = state.compression_stats()
    per_before = before / compressed_steps if compressed_steps else 0.0
    per_after = after / compressed_steps if compressed_steps else 0.0
    return {
        "comm_hook": "powersgd",
        "powersgd_rank": state.matrix_approximation_rank,
        "powersgd_steps": compressed_steps,
        "allreduce_bytes": total * 4,
        "powersgd_bytes": round((total - per_before + per_after) * 4),
    }


# --------------------------------------------------------------------------------------------
# Checkpoints: what a restarted worker resumes from


def save_checkpoint(path: str, model, opt, losses: list[float], rank: int, launched: bool) -> None:
    """After a step: rank 0 writes the full model and optimizer state and the losses so far
    (``torch.distributed.checkpoint.state_dict`` gathers FSDP's shards), replacing the file
    whole; every worker waits for it (a barrier), so a worker that dies in the next step leaves
    this step's checkpoint behind."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict

    model_state, optim_state = get_state_dict(
        model, opt, options=StateDictOptions(full_state_dict=True)
    )
    if rank == 0:
        tmp = f"{path}.tmp"
        torch.save({"model": model_state, "optim": optim_state, "losses": losses}, tmp)
        os.replace(tmp, path)
    if launched:
        dist.barrier()


def load_checkpoint(path: str, model, opt) -> list[float]:
    """Load the full state :func:`save_checkpoint` wrote into this worker's model and optimizer
    (FSDP keeps its shard of each tensor); returns the losses of the steps it holds."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_state_dict

    saved = torch.load(path, weights_only=False)
    set_state_dict(
        model,
        opt,
        model_state_dict=saved["model"],
        optim_state_dict=saved["optim"],
        options=StateDictOptions(full_state_dict=True),
    )
    return saved["losses"]


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
        with _no_sync(net, launched):
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


@contextlib.contextmanager
def _no_sync(net: nn.Module, launched: bool):
    """Backward without gradient communication: DDP's ``no_sync``, FSDP2's
    ``set_requires_gradient_sync(False)``."""
    if not launched:
        yield
    elif isinstance(net, DDP):
        with net.no_sync():
            yield
    else:
        net.set_requires_gradient_sync(False)
        try:
            yield
        finally:
            net.set_requires_gradient_sync(True)


if __name__ == "__main__":
    main()
