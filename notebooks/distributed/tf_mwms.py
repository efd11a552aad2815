"""A TensorFlow data-parallel worker: MultiWorkerMirroredStrategy and a traced custom step.

TensorFlow has no launcher: start one process per worker, each with the whole cluster and its
own index in TF_CONFIG, for example worker 0 of two:
    TF_CONFIG='{"cluster": {"worker": ["127.0.0.1:20001", "127.0.0.1:20002"]},
                "task": {"type": "worker", "index": 0}}' python tf_mwms.py --out run
Each worker writes rank<N>.json (losses, step times, the traced step's collective ops) and
rank<N>.npz (weights). Written for TensorFlow 2.21 with Keras 3 (Keras `fit` under this strategy
fails there: keras-team/keras#20585, so the loop is written out).
"""

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--out", type=Path, required=True, help="folder for each rank's results")
parser.add_argument("--steps", type=int, default=10)
parser.add_argument("--batch", type=int, default=16, help="samples per worker per step")
parser.add_argument("--width", type=int, default=512, help="units of each hidden layer")
args = parser.parse_args()

# First TensorFlow call: reads TF_CONFIG, starts this worker's gRPC server, meets the others.
strategy = tf.distribute.MultiWorkerMirroredStrategy()
rank, world = strategy.cluster_resolver.task_id, strategy.num_replicas_in_sync
global_batch = args.batch * world

rng = np.random.default_rng(0)  # the same data in every worker
samples = args.steps * global_batch
x = rng.standard_normal((samples, 256), dtype=np.float32)
y = rng.integers(0, 10, samples)
# One dataset of global batches: the strategy gives each worker its share (auto-sharding).
batches = tf.data.Dataset.from_tensor_slices((x, y)).batch(global_batch)
iterator = iter(strategy.experimental_distribute_dataset(batches))

with strategy.scope():  # variables created here are mirrored on every worker
    model = tf.keras.Sequential(
        [tf.keras.Input((256,))]
        + [tf.keras.layers.Dense(args.width, activation="relu") for _ in range(2)]
        + [tf.keras.layers.Dense(10)]
    )
    optimizer = tf.keras.optimizers.SGD(learning_rate=0.01, momentum=0.9)
    optimizer.build(model.trainable_variables)  # its momentum now, not in the first trace


def replica_step(x, y):
    with tf.GradientTape() as tape:
        logits = model(x, training=True)
        per_example = tf.keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True)
        loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))  # all-reduces the grads
    return loss


@tf.function  # traced once: the all-reduce becomes collective ops in the graph
def train_step(iterator):
    losses = strategy.run(replica_step, args=next(iterator))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)


losses, step_s = [], []
for _ in range(args.steps):
    start = time.perf_counter()
    losses.append(float(train_step(iterator)))  # float() waits for the step
    step_s.append(time.perf_counter() - start)


def op_types(graph_def):
    """Every op type in a graph and in the functions it calls."""
    nodes = list(graph_def.node)
    nodes += [n for f in graph_def.library.function for n in f.node_def]
    return sorted(n.op for n in nodes)


traces = train_step.experimental_get_tracing_count()  # before the look below
ops = op_types(train_step.get_concrete_function(iterator).graph.as_graph_def())
args.out.mkdir(parents=True, exist_ok=True)
np.savez(args.out / f"rank{rank}.npz", **{v.path: v.numpy() for v in model.trainable_variables})
result = {"rank": rank, "world": world, "pid": os.getpid(), "losses": losses, "step_s": step_s}
result.update(traces=traces, ops=len(ops))
result.update(collectives=[op for op in ops if op.startswith("Collective")])
(args.out / f"rank{rank}.json").write_text(json.dumps(result))
