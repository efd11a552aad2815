"""One MindSpore data-parallel worker: ``msrun``, ``init()``, data-parallel mode, gradient reducer.

Started by ``msrun`` (its command line: :mod:`labkit.frameworks.mindspore.launch`), which starts
a scheduler process and one process per worker and gives each its role and rank through
environment variables (``MS_ROLE``, ``MS_SCHED_HOST``, ``MS_SCHED_PORT``, ``MS_WORKER_NUM``,
``RANK_ID``). Without them (``Job.single``) it trains as one plain process, the reference.

What MindSpore asks you to write, in order:

1. ``mindspore.communication.init()``: joins the cluster (on CPUs MindSpore's own TCP
   collectives; HCCL on Ascend, NCCL on GPUs);
2. ``set_auto_parallel_context(parallel_mode=DATA_PARALLEL, gradients_mean=True)``. MindSpore
   2.8's docstring flags this call for removal in favour of
   ``mindspore.parallel.auto_parallel.AutoParallel``, a wrapper of a graph-mode network whose
   2.8 documentation lists Ascend only; on CPUs (data parallel only, says the same docstring)
   and in PyNative mode the context is what 2.8 offers, so the worker keeps it;
3. a dataset with ``num_shards=world, shard_id=rank`` (each worker reads its shard);
4. ``nn.DistributedGradReducer`` on the gradients before the optimizer: the all-reduce.

PyNative mode (MindSpore 2.x's default, eager) throughout; ``--strategy auto_parallel`` tries
MindSpore's ``AutoParallel`` instead (:func:`auto_parallel`: graph mode, Ascend and GPU only in
2.8). Run through :mod:`labkit.distributed`;
``msrun`` runs a script file, so the launch module writes a two-line entry script that runs this
module.
"""

from __future__ import annotations

import os
import time

import numpy as np

from ... import resnet
from ...util import stats
from .._kit import worker
from . import SPEC

__all__ = ["Synthetic", "build_model", "main", "measure_allreduce", "train", "weights_of"]


def main() -> None:
    args = worker.start(SPEC)
    if os.environ.get("MS_ROLE") == "MS_SCHED":  # msrun runs this file as its scheduler too
        from mindspore.communication import init

        init()  # serves the cluster until the workers leave; errors go to msrun's scheduler.log
        return
    launched = "MS_ROLE" in os.environ
    rank = int(os.environ.get("RANK_ID", "0"))
    worker.run_worker(
        SPEC.name, rank, lambda: train(args, launched, rank), args.out, hard_exit=False
    )


class Synthetic(worker.SyntheticImages):
    """Random-access source for ``GeneratorDataset``: sample i is the same in every process."""

    def __getitem__(self, i: int):
        x, y = super().__getitem__(i)
        return x, np.int32(y)


def build_model(name: str, seed: int, width: int = resnet.WIDTH):
    import mindspore as ms
    from mindspore import nn

    if name == "resnet50":
        from . import adapter

        return adapter.build_resnet50(resnet.init_weights(seed, width=width))
    ms.set_seed(seed)

    class TinyNet(nn.Cell):  # as in the torch worker: no BatchNorm
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 16, 3, pad_mode="pad", padding=1, has_bias=True)
            self.conv2 = nn.Conv2d(16, 32, 3, stride=2, pad_mode="pad", padding=1, has_bias=True)
            self.fc = nn.Dense(32, worker.TINY_CLASSES)
            self.relu = nn.ReLU()

        def construct(self, x):
            x = self.relu(self.conv2(self.relu(self.conv1(x))))
            return self.fc(x.mean(axis=(2, 3)))

    return TinyNet()


def weights_of(net, name: str) -> dict[str, np.ndarray]:
    if name == "resnet50":
        from . import adapter

        return adapter.to_canonical(net)
    return {n: np.array(p.asnumpy(), copy=True) for n, p in net.parameters_and_names()}


def train(args, launched: bool, rank: int) -> None:
    from . import adapter

    if args.threads:
        adapter.set_threads(args.threads)
    import mindspore as ms
    import mindspore.dataset as mds
    from mindspore import nn
    from mindspore.communication import get_group_size, init

    auto = args.strategy == "auto_parallel"
    if auto:
        ms.set_context(mode=ms.GRAPH_MODE)  # AutoParallel compiles the step as a static graph
    t0 = time.perf_counter()
    if launched:
        init()  # joins the cluster that msrun described in the environment
        if not auto:
            ms.set_auto_parallel_context(
                parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True
            )
    world = get_group_size() if launched else 1
    init_s = time.perf_counter() - t0

    net = build_model(args.model, args.seed, args.width)
    net.set_train(True)
    num_classes = int(dict(net.parameters_and_names())["fc.bias"].shape[0])
    source = Synthetic(args.steps * args.batch * world, args.image_size, args.seed, num_classes)
    shards = {"num_shards": world, "shard_id": rank} if launched else {}
    data = mds.GeneratorDataset(source, ["image", "label"], shuffle=False, **shards).batch(
        args.batch
    )

    loss_fn = nn.CrossEntropyLoss()
    optimizer = nn.Momentum(net.trainable_params(), learning_rate=args.lr, momentum=args.momentum)
    grad_fn = ms.value_and_grad(lambda x, y: loss_fn(net(x), y), None, optimizer.parameters)
    reducer = nn.DistributedGradReducer(optimizer.parameters) if launched else (lambda g: g)

    def step(x, y):
        loss, grads = grad_fn(x, y)
        optimizer(reducer(grads))  # the reducer averages the gradients across workers
        return loss

    if auto and launched:
        step = auto_parallel(grad_fn, optimizer)

    steps = worker.Steps(args, rank)
    for x, y in data.create_tuple_iterator():
        # which images this worker saw
        started = steps.begin(float(x.asnumpy().astype(np.float64).sum()))
        loss = step(x, y)
        steps.end(float(loss.asnumpy()), started)  # asnumpy() waits for the step
    weights = weights_of(net, args.model)

    params = int(sum(np.prod(p.shape) for p in net.trainable_params()))
    result = worker.result_fields(
        steps,
        framework=SPEC.name,
        version=ms.__version__,
        world=world,
        launcher="msrun" if launched else "single process",
        backend=("AutoParallel" if auto else "DATA_PARALLEL (CPU collectives)") if launched else "",
        device="cpu",
        threads=args.threads or "default",
        parameters=params,
        init_s=init_s,
    )
    if args.measure and launched:
        result.update(measure_allreduce(params, args.measure))
    worker.write_result(args.out, rank, result, weights)


def auto_parallel(grad_fn, optimizer):
    """The training step under ``mindspore.parallel.auto_parallel.AutoParallel`` (MindSpore
    2.8's parallel API) in its data-parallel form: ``semi_auto`` with no operator strategies,
    the batch split over the workers (``dataset_strategy("data_parallel")``), gradients averaged
    (``enable_gradients_mean``); AutoParallel inserts the all-reduce itself.

    MindSpore 2.8 documents AutoParallel for Ascend only, and on CPUs its compile refuses:
    "Invalid communication backend: CPU for semi_auto_parallel/auto_parallel mode, currently
    only support Ascend/GPU backend" (tests/test_large_model_training.py holds the error)."""
    from mindspore.parallel.auto_parallel import AutoParallel

    def train_step(x, y):
        loss, grads = grad_fn(x, y)
        optimizer(grads)
        return loss

    parallel = AutoParallel(train_step, parallel_mode="semi_auto")
    parallel.dataset_strategy("data_parallel")
    parallel.enable_gradients_mean()
    return parallel


def measure_allreduce(params: int, repeats: int) -> dict:
    """Time one all-reduce (sum) of a gradient-sized buffer across the workers, alone."""
    import mindspore as ms
    from mindspore import ops

    flat = ms.Tensor(np.zeros(params, dtype=np.float32))
    reduce = ops.AllReduce()
    float(reduce(flat)[0].asnumpy())  # warm up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        float(reduce(flat)[0].asnumpy())
        times.append(time.perf_counter() - start)
    return {"allreduce_s": stats.median(times)}


if __name__ == "__main__":
    main()
