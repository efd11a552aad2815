"""One MindSpore data-parallel worker: ``msrun``, ``init()``, data-parallel mode, gradient reducer.

Started by ``msrun`` (its command line: :mod:`labkit.frameworks.mindspore.launch`), which starts
a scheduler process and one process per worker and gives each its role and rank through
environment variables (``MS_ROLE``, ``MS_SCHED_HOST``, ``MS_SCHED_PORT``, ``MS_WORKER_NUM``,
``RANK_ID``). Without them (``Job.single``) it trains as one plain process, the reference.

What MindSpore asks you to write, in order:

1. ``mindspore.communication.init()``: joins the cluster (on CPUs MindSpore's own TCP
   collectives; HCCL on Ascend, NCCL on GPUs);
2. ``set_auto_parallel_context(parallel_mode=DATA_PARALLEL, gradients_mean=True)``;
3. a dataset with ``num_shards=world, shard_id=rank`` (each worker reads its shard);
4. ``nn.DistributedGradReducer`` on the gradients before the optimizer: the all-reduce.

PyNative mode (MindSpore 2.x's default, eager) throughout. Run through :mod:`labkit.distributed`;
``msrun`` runs a script file, so the launch module writes a two-line entry script that runs this
module.
"""

from __future__ import annotations

import os
import statistics
import time

import numpy as np

from ... import distributed, resnet


def main() -> None:
    args = distributed.worker_parser("mindspore").parse_args()
    distributed.start_watchdog(args.deadline)
    if os.environ.get("MS_ROLE") == "MS_SCHED":  # msrun runs this file as its scheduler too
        from mindspore.communication import init

        init()  # serves the cluster until the workers leave; errors go to msrun's scheduler.log
        return
    launched = "MS_ROLE" in os.environ
    rank = int(os.environ.get("RANK_ID", "0"))
    distributed.run_worker(
        "mindspore", rank, lambda: train(args, launched, rank), args.out, hard_exit=False
    )


class Synthetic:
    """Random-access source for ``GeneratorDataset``: sample i is the same in every process."""

    def __init__(self, length: int, image_size: int, seed: int, num_classes: int):
        self.length, self.image_size, self.seed, self.num_classes = (
            length,
            image_size,
            seed,
            num_classes,
        )

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, i: int):
        x, y = distributed.synthetic_sample(int(i), self.image_size, self.seed, self.num_classes)
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
            self.fc = nn.Dense(32, distributed.TINY_CLASSES)
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

    t0 = time.perf_counter()
    if launched:
        init()  # joins the cluster that msrun described in the environment
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

    losses, step_s, data_sum = [], [], 0.0
    for i, (x, y) in enumerate(data.create_tuple_iterator()):
        if i == 0:
            distributed.maybe_fault(rank, args)
        data_sum += float(x.asnumpy().astype(np.float64).sum())  # which images this worker saw
        start = time.perf_counter()
        loss, grads = grad_fn(x, y)
        optimizer(reducer(grads))  # the reducer averages the gradients across workers
        losses.append(float(loss.asnumpy()))  # asnumpy() waits for the step
        step_s.append(time.perf_counter() - start)
        distributed.report_step(args.out, rank)
    weights = weights_of(net, args.model)

    params = int(sum(np.prod(p.shape) for p in net.trainable_params()))
    result = distributed.result_fields(
        args,
        framework="mindspore",
        version=ms.__version__,
        rank=rank,
        world=world,
        launcher="msrun" if launched else "single process",
        backend="DATA_PARALLEL (CPU collectives)" if launched else "",
        device="cpu",
        threads=args.threads or "default",
        parameters=params,
        losses=losses,
        step_s=step_s,
        data_sum=data_sum,
        init_s=init_s,
    )
    if args.measure and launched:
        result.update(measure_allreduce(params, args.measure))
    distributed.write_result(args.out, rank, result, weights)


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
    return {"allreduce_s": statistics.median(times)}


if __name__ == "__main__":
    main()
