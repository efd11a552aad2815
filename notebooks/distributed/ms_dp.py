"""A MindSpore data-parallel worker: msrun, init(), DATA_PARALLEL, the step as one graph.

msrun starts a scheduler and the workers, each told its role and rank in the environment:
    msrun --worker_num 2 --local_worker_num 2 --master_addr 127.0.0.1 --master_port 8118 \
        --join True --log_dir logs ms_dp.py --out run
(MS_WORKER_IP=127.0.0.1 keeps each worker's own socket on loopback.) Each worker writes
rank<N>.json (losses, step times, the compiled graph's AllReduce nodes) and rank<N>.npz.
Written for MindSpore 2.8 on CPUs (its own TCP collectives; HCCL on Ascend, NCCL on GPUs).
"""

import argparse
import json
import os
import time
from pathlib import Path

import mindspore as ms
import numpy as np
from mindspore import nn
from mindspore.communication import get_group_size, get_rank, init

parser = argparse.ArgumentParser()
parser.add_argument("--out", type=Path, required=True, help="folder for each rank's results")
parser.add_argument("--steps", type=int, default=10)
parser.add_argument("--batch", type=int, default=16, help="samples per worker per step")
parser.add_argument("--width", type=int, default=512, help="units of each hidden layer")
parser.add_argument("--mode", choices=["graph", "pynative"], default="graph")
args = parser.parse_args()

ir_dir = args.out / f"ir_{os.environ.get('RANK_ID', 'sched')}"
mode = ms.GRAPH_MODE if args.mode == "graph" else ms.PYNATIVE_MODE
ms.set_context(mode=mode, save_graphs=args.mode == "graph", save_graphs_path=str(ir_dir))
init()  # joins the cluster msrun described (the scheduler process serves it and returns)
if os.environ.get("MS_ROLE") == "MS_SCHED":
    raise SystemExit
ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True)
rank, world = get_rank(), get_group_size()

rng = np.random.default_rng(0)  # the same data in every worker; each reads its own shard
samples = args.steps * args.batch * world
x = rng.standard_normal((samples, 256), dtype=np.float32)
y = rng.integers(0, 10, samples).astype(np.int32)
shard = slice(rank, None, world)  # every world-th sample, as a DistributedSampler would

ms.set_seed(0)
net = nn.SequentialCell(
    [nn.Dense(256, args.width), nn.ReLU(), nn.Dense(args.width, args.width), nn.ReLU()]
    + [nn.Dense(args.width, 10)]
)
loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
optimizer = nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
# TrainOneStepCell inserts the gradient reducer (an AllReduce per gradient) in DATA_PARALLEL;
# in graph mode the whole step, all-reduces included, is compiled as one graph.
step = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), optimizer)
step.set_train()

losses, step_s = [], []
for i in range(args.steps):
    rows = slice(i * args.batch, (i + 1) * args.batch)
    xb, yb = ms.Tensor(x[shard][rows]), ms.Tensor(y[shard][rows])
    start = time.perf_counter()
    losses.append(float(step(xb, yb).asnumpy()))  # asnumpy() waits for the step
    step_s.append(time.perf_counter() - start)

# The compiled graph, as MindSpore saved it (save_graphs): count its AllReduce nodes.
irs = sorted(ir_dir.rglob("*.ir"), key=lambda p: p.stat().st_mtime) if ir_dir.exists() else []
last = irs[-1].read_text() if irs else ""
allreduce = sum(
    " = AllReduce(" in line or "PrimFunc_AllReduce(" in line for line in last.splitlines()
)
weights = {p.name: p.asnumpy() for p in net.trainable_params()}
args.out.mkdir(parents=True, exist_ok=True)
np.savez(args.out / f"rank{rank}.npz", **weights)
result = {"rank": rank, "world": world, "pid": os.getpid(), "losses": losses, "step_s": step_s}
result.update(mode=args.mode, allreduce_nodes=allreduce, ir_file=irs[-1].name if irs else "")
(args.out / f"rank{rank}.json").write_text(json.dumps(result))
