"""One TensorFlow data-parallel worker: MultiWorkerMirroredStrategy and a custom training loop.

Started once per worker (:mod:`labkit.frameworks.tensorflow.launch`), each process with its own
``TF_CONFIG`` (the whole cluster's ``host:port`` list and this worker's index). Without
``TF_CONFIG`` (``Job.single``) it trains as one plain process under the default strategy.

What TensorFlow asks you to write, in order:

1. ``strategy = tf.distribute.MultiWorkerMirroredStrategy()`` before anything else touches
   TensorFlow (it reads ``TF_CONFIG`` and starts this worker's gRPC server); collectives are
   chosen automatically (``CommunicationImplementation.AUTO``: NCCL on GPUs, ring on CPUs);
2. model and optimizer created inside ``strategy.scope()`` (their variables are mirrored);
3. a distributed dataset (``distribute_datasets_from_function``: each worker reads its shard;
   ``experimental_distribute_dataset`` of a whole dataset shards it for you, by file or by
   element, also in a custom loop: :func:`auto_shard_ids` records what each worker got);
4. a step run on every replica with ``strategy.run`` inside ``tf.function``; the loss is divided
   by the *global* batch (``tf.nn.compute_average_loss``), and ``optimizer.apply_gradients``
   all-reduces (sums) the gradients across workers before updating.

``model.fit`` is not used: with TF 2.21 and Keras 3.15 it fails under this strategy with two
workers ("unsupported type PerReplica"), while the custom loop below works.

Run as ``TF_CONFIG=... python -m labkit.frameworks.tensorflow.distributed --out DIR ...``.
"""

from __future__ import annotations

import json
import os
import time

import numpy as np

from ... import resnet
from ...util import stats
from .._kit import worker
from . import SPEC

__all__ = [
    "AUTO_SHARD_SAMPLES",
    "auto_shard_ids",
    "build_model",
    "dataset_fn",
    "main",
    "make_strategy",
    "measure_allreduce",
    "train",
    "weights_of",
]


def main() -> None:
    args = worker.start(SPEC)
    config = json.loads(os.environ.get("TF_CONFIG") or "null")
    rank = int(config["task"]["index"]) if config else 0
    worker.run_worker(SPEC.name, rank, lambda: train(args, config, rank), args.out)


def make_strategy(config):
    import tensorflow as tf

    if not config:
        return tf.distribute.get_strategy()  # the default strategy: one plain process
    options = tf.distribute.experimental.CommunicationOptions(
        implementation=tf.distribute.experimental.CommunicationImplementation.AUTO
    )
    return tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)


def build_model(name: str, seed: int, width: int = resnet.WIDTH):
    import keras

    if name == "resnet50":
        from . import adapter

        return adapter.build_resnet50(resnet.init_weights(seed, width=width))
    keras.utils.set_random_seed(seed)
    return keras.Sequential(
        [  # TinyNet, as in the torch worker: no BatchNorm
            keras.Input((None, None, 3)),
            keras.layers.Conv2D(16, 3, padding="same", activation="relu", name="conv1"),
            keras.layers.ZeroPadding2D(1),
            keras.layers.Conv2D(32, 3, strides=2, activation="relu", name="conv2"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(worker.TINY_CLASSES, name="fc"),
        ],
        name="tiny",
    )


def weights_of(model, name: str) -> dict[str, np.ndarray]:
    if name == "resnet50":
        from . import adapter

        return adapter.to_canonical(model)
    return {v.path: np.asarray(v.numpy()) for v in model.weights}


def dataset_fn(args, global_batch: int, num_classes: int):
    """Each input pipeline (one per worker) reads every n-th sample: DistributedSampler's split."""
    import tensorflow as tf

    size = args.image_size

    def load(i):
        x, y = worker.synthetic_sample(int(i), size, args.seed, num_classes)
        return x.transpose(1, 2, 0), np.int64(y)  # NHWC: TensorFlow is channels-last

    def fn(ctx: tf.distribute.InputContext):
        ds = tf.data.Dataset.range(args.steps * global_batch)
        ds = ds.shard(ctx.num_input_pipelines, ctx.input_pipeline_id)
        ds = ds.map(lambda i: tf.numpy_function(load, [i], (tf.float32, tf.int64)))
        ds = ds.map(lambda x, y: (tf.ensure_shape(x, (size, size, 3)), tf.ensure_shape(y, ())))
        return ds.batch(ctx.get_per_replica_batch_size(global_batch), drop_remainder=True)

    return fn


def train(args, config, rank: int) -> None:
    from . import adapter

    if args.threads:
        adapter.set_threads(args.threads)  # thread pools are fixed once TensorFlow starts
    t0 = time.perf_counter()
    strategy = make_strategy(config)  # before anything runs: it starts this worker's server
    import keras
    import tensorflow as tf

    world = strategy.num_replicas_in_sync
    init_s = time.perf_counter() - t0
    global_batch = args.batch * world

    with strategy.scope():  # variables created here are mirrored on every worker
        model = build_model(args.model, args.seed, args.width)
        optimizer = keras.optimizers.SGD(learning_rate=args.lr, momentum=args.momentum)
        optimizer.build(model.trainable_variables)
    num_classes = int(model.output_shape[-1])
    data = strategy.distribute_datasets_from_function(dataset_fn(args, global_batch, num_classes))

    def replica_step(x, y):
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            per_example = keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True)
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))  # all-reduce (sum) inside
        return loss

    @tf.function
    def step(x, y):
        losses = strategy.run(replica_step, args=(x, y))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)

    steps = worker.Steps(args, rank)
    for x, y in data:
        seen = sum(  # which images this worker saw
            float(tf.reduce_sum(tf.cast(v, tf.float64)))
            for v in strategy.experimental_local_results(x)
        )
        started = steps.begin(seen)
        steps.end(float(step(x, y).numpy()), started)  # .numpy() waits for the step to finish
    weights = weights_of(model, args.model)

    params = int(sum(np.prod(v.shape) for v in model.trainable_variables))
    result = worker.result_fields(
        steps,
        framework=SPEC.name,
        version=tf.__version__,
        world=world,
        launcher="TF_CONFIG" if config else "single process",
        backend="MultiWorkerMirroredStrategy (AUTO collectives)" if config else "",
        device="cpu",
        threads=args.threads or "default",
        parameters=params,
        init_s=init_s,
    )
    if config:
        result["auto_shard_ids"] = auto_shard_ids(strategy, AUTO_SHARD_SAMPLES)
    if args.measure and config:
        result.update(measure_allreduce(strategy, params, args.measure))
    worker.write_result(args.out, rank, result, weights)


#: the size of the dataset :func:`auto_shard_ids` distributes
AUTO_SHARD_SAMPLES = 8


def auto_shard_ids(strategy, samples: int) -> list[int]:
    """The sample ids this worker reads from ``experimental_distribute_dataset`` of one whole
    dataset, ``range(samples)`` batched by the global batch, with TensorFlow's default options.

    Nothing here shards by hand: with the default ``AutoShardPolicy.AUTO`` each worker's input
    pipeline keeps its own share (by file when the data comes from files, otherwise by element).
    """
    import tensorflow as tf

    world = strategy.num_replicas_in_sync
    data = strategy.experimental_distribute_dataset(tf.data.Dataset.range(samples).batch(world))
    return sorted(
        int(v) for batch in data for t in strategy.experimental_local_results(batch) for v in t
    )


def measure_allreduce(strategy, params: int, repeats: int) -> dict:
    """Time one all-reduce (sum) of a gradient-sized buffer across the workers, alone."""
    import tensorflow as tf

    flat = tf.zeros([params])

    @tf.function
    def reduce():
        ctx = tf.distribute.get_replica_context
        return strategy.run(
            lambda: tf.reduce_sum(ctx().all_reduce(tf.distribute.ReduceOp.SUM, flat))
        )

    float(
        strategy.reduce(tf.distribute.ReduceOp.SUM, reduce(), axis=None).numpy()
    )  # trace + warm up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        float(strategy.reduce(tf.distribute.ReduceOp.SUM, reduce(), axis=None).numpy())
        times.append(time.perf_counter() - start)
    return {"allreduce_s": stats.median(times)}


if __name__ == "__main__":
    main()
