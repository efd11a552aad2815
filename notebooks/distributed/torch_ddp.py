"""A PyTorch data-parallel worker: DistributedDataParallel, eager or under torch.compile.

Start two on this machine (every socket on 127.0.0.1, notebook 08 says why the backend differs
from plain torchrun's):
    python -m labkit.frameworks.torch.torchrun --nproc-per-node 2 \
        --rdzv-backend bound-static --rdzv-endpoint 127.0.0.1:29500 torch_ddp.py --out run
Each worker writes rank<N>.json (losses, step times, graphs compiled) and rank<N>.npz (weights).
Written for PyTorch 2.13 (gloo on CPUs; on GPUs use "nccl" and move model and data to the GPU).
"""

import argparse
import itertools
import json
import os
import time
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--out", type=Path, required=True, help="folder for each rank's results")
parser.add_argument("--steps", type=int, default=10)
parser.add_argument("--batch", type=int, default=16, help="samples per worker per step")
parser.add_argument("--width", type=int, default=512, help="units of each hidden layer")
parser.add_argument("--layers", type=int, default=6, help="hidden layers")
parser.add_argument("--bucket-cap-mb", type=float, default=25.0, help="DDP's gradient buckets")
parser.add_argument("--compile", choices=["inductor", "aot_eager"], help="torch.compile backend")
parser.add_argument("--powersgd", type=int, help="PowerSGD's rank: all-reduce low-rank factors")
parser.add_argument("--fsdp", action="store_true", help="shard with fully_shard instead of DDP")
args = parser.parse_args()

dist.init_process_group("gloo")  # RANK, WORLD_SIZE, MASTER_ADDR/PORT: set by torchrun
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(max(1, (os.cpu_count() or 2) // world))

# The same data in every worker; DistributedSampler hands each rank every world-th sample.
torch.manual_seed(0)
samples = args.steps * args.batch * world
data = TensorDataset(torch.randn(samples, 256), torch.randint(0, 10, (samples,)))
sampler = DistributedSampler(data, shuffle=False)
loader = DataLoader(data, batch_size=args.batch, sampler=sampler)


class MLP(nn.Module):
    """Defined here, not as nn.Sequential: torch.compile traces frames of the user's code, and
    under DDP it starts at the wrapped module's forward (a frame inside torch.nn is skipped)."""

    def __init__(self, width: int, depth: int):
        super().__init__()
        sizes = [256] + [width] * depth
        self.hidden = nn.ModuleList(nn.Linear(a, b) for a, b in itertools.pairwise(sizes))
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        for layer in self.hidden:
            x = torch.relu(layer(x))
        return self.head(x)


model = MLP(args.width, args.layers)
if args.fsdp:  # FSDP2: each worker keeps 1/world of every parameter, gradient, optimizer state
    from torch.distributed.fsdp import fully_shard

    for layer in model.hidden:
        fully_shard(layer)
    ddp = fully_shard(model)
else:
    ddp = DDP(model, bucket_cap_mb=args.bucket_cap_mb)  # broadcasts rank 0's weights
if args.powersgd:  # a communication hook: rank-r factors replace each gradient matrix
    from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as psgd

    state = psgd.PowerSGDState(None, matrix_approximation_rank=args.powersgd, start_powerSGD_iter=2)
    ddp.register_comm_hook(state, psgd.powerSGD_hook)

graphs = []  # one entry per FX graph that torch.compile hands its backend


def counting_backend(gm, example_inputs):
    """The chosen backend (inductor: torch.compile's default), counting the graphs it gets."""
    graphs.append(sum(n.op in ("call_function", "call_method") for n in gm.graph.nodes))
    return torch._dynamo.lookup_backend(args.compile)(gm, example_inputs)


# DDPOptimizer (torch._dynamo.config.optimize_ddp) splits the captured graph at the
# gradient-bucket boundaries, so that each bucket's all-reduce can start during backward.
step_model = torch.compile(ddp, backend=counting_backend) if args.compile else ddp
opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)

losses, step_s = [], []
for x, y in loader:
    start = time.perf_counter()
    loss = nn.functional.cross_entropy(step_model(x), y)
    loss.backward()  # DDP all-reduces each bucket of gradients as soon as it is ready
    opt.step()
    opt.zero_grad()
    step_s.append(time.perf_counter() - start)
    losses.append(loss.item())

args.out.mkdir(parents=True, exist_ok=True)
full = (lambda p: p.full_tensor()) if args.fsdp else (lambda p: p)  # FSDP: gather the shards
weights = {n: full(p).detach().numpy() for n, p in model.named_parameters()}
held = sum((p.to_local() if args.fsdp else p).numel() for p in model.parameters())
np.savez(args.out / f"rank{rank}.npz", **weights)
result = {"rank": rank, "world": world, "pid": os.getpid(), "losses": losses, "step_s": step_s}
result.update(graphs=len(graphs), graph_ops=graphs, bucket_cap_mb=args.bucket_cap_mb)
result.update(parameters_held=held, parameters=sum(w.size for w in weights.values()))
(args.out / f"rank{rank}.json").write_text(json.dumps(result))
dist.destroy_process_group()
