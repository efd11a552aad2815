"""Measure every framework against the float64 reference in a fresh process with N threads.

Run by tests/test_resnet_crosscheck.py (``python tests/crosscheck_child.py N OUT.json``): a
thread count fixed once per process (TensorFlow's and MindSpore's pools) is then never the one an
earlier test left, and the same checks run with 1 and with 2 threads, so a bound that holds for
one summation order only fails.
"""

import json
import sys

import labkit  # noqa: F401  (protobuf's pure-Python implementation, before any framework)
from labkit import frameworks, resnet
from labkit.frameworks import crosscheck as cc

#: (weights seed, batch, image size, width): three batches of ResNet-50, one of the narrow one
LOGIT_CASES = [(0, 2, 64, 64), (1, 1, 32, 64), (2, 3, 32, 64), (3, 2, 32, 16)]
#: (weights seed, batch seed, batch, image size): the first is the step that failed on the Intel
#: AMX machine (seed-0 weights, batch 2, 64 px), the second a batch of 3
STEP_CASES = [(0, 3, 2, 64), (4, 4, 3, 64)]
OTHERS = ("tensorflow", "mindspore", "paddle", "onnxruntime")
TRAINING = ("tensorflow", "mindspore", "paddle")


def main(threads: int, out: str) -> None:
    names = [cc.REFERENCE, *OTHERS]
    for name in frameworks.import_order(names):  # PaddlePaddle before TensorFlow
        frameworks.get(name).set_threads(threads)
    logits = {}
    for seed, batch, size, width in LOGIT_CASES:
        check = cc.crosscheck(names, seed=seed, batch=batch, image_size=size, width=width)
        logits[f"seed{seed}-b{batch}-{size}px-w{width}"] = check
    steps = {}
    for wseed, seed, batch, size in STEP_CASES:
        weights = resnet.init_weights(seed=wseed)
        images, labels = resnet.random_batch(batch, size, seed=seed)
        check = cc.step_check(list(TRAINING), weights, images, labels)
        steps[f"weights{wseed}-b{batch}-{size}px"] = check
    effective = {name: frameworks.get(name).threads() for name in names}
    with open(out, "w") as f:
        json.dump({"logits": logits, "steps": steps, "threads": effective}, f)


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
