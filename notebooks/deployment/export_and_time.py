"""Export ResNet-50 from TensorFlow or MindSpore, load it back from the file alone, run and time it.

Notebook 07 runs this script once per framework, each in a fresh Python process: a deployed
model is loaded by a process that has never seen the code that built it, and each framework's
runtime then lives in a process of its own (the notebook's kernel keeps PyTorch and ONNX Runtime
only, within Binder's 2 GB). For example, for the narrow network of the smoke profile:

    python export_and_time.py tensorflow --width 8 --images images.npy --probe probe.npy --out DIR

For each deployment path it writes into DIR the exported model, the logits it computes on the
probe images (``<mode>_probe.npy``), and one entry in ``<framework>.json``: its name, file,
export time and two benchmark records (batch-1 latency and batch throughput, measured by
``labkit.bench.measure`` as the profile in ``LABKIT_PROFILE`` says, the same as in the notebook).
"""

import argparse
import json
import time
from pathlib import Path

from labkit import bench, frameworks, hardware, profiles, resnet

import deploy  # beside this script: notebook 07's records, sizes and agreement
import numpy as np


def nhwc(x):  # TensorFlow's layout is channels-last
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1))


def tensorflow_paths(weights, out: Path):
    """Keras 3 -> SavedModel (loaded without Keras) -> TF Lite (run by LiteRT's interpreter)."""
    import tensorflow as tf
    from ai_edge_litert.interpreter import Interpreter

    model = frameworks.get("tensorflow").build_resnet50(weights)  # the same weights as PyTorch's
    saved_model = out / "resnet50_savedmodel"
    t0 = time.perf_counter()
    model.export(str(saved_model), format="tf_saved_model", verbose=False)
    export_s = time.perf_counter() - t0
    serve = tf.saved_model.load(str(saved_model)).signatures["serving_default"]  # TF Serving's
    print("SavedModel:", serve.structured_input_signature[1], "->", serve.structured_outputs)
    yield (
        "TF SavedModel",
        "tensorflow",
        "savedmodel",
        saved_model,
        export_s,
        (lambda x: serve(images=tf.constant(nhwc(x)))["output_0"].numpy()),
    )

    tflite_file = out / "resnet50.tflite"
    t0 = time.perf_counter()
    tflite_file.write_bytes(tf.lite.TFLiteConverter.from_saved_model(str(saved_model)).convert())
    export_s = time.perf_counter() - t0
    interpreter = Interpreter(model_path=str(tflite_file), num_threads=hardware.default_threads())
    litert = interpreter.get_signature_runner("serving_default")  # resizes to each batch
    print("TF Lite signatures:", interpreter.get_signature_list())
    yield (
        "TF Lite (LiteRT)",
        "tflite",
        "tflite",
        tflite_file,
        export_s,
        (lambda x: litert(images=nhwc(x))["output_0"]),
    )


def mindspore_paths(weights, out: Path):
    """MindSpore -> MindIR (any batch and image size), loaded back as a graph by nn.GraphCell."""
    import mindspore as ms
    from mindspore import nn

    net = frameworks.get("mindspore").build_resnet50(weights)
    net.set_train(False)
    t0 = time.perf_counter()
    any_batch = ms.Tensor(shape=[None, 3, None, None], dtype=ms.float32)  # a dynamic shape
    ms.export(net, any_batch, file_name=str(out / "resnet50"), file_format="MINDIR")
    export_s = time.perf_counter() - t0
    graph = nn.GraphCell(ms.load(str(out / "resnet50.mindir")))
    yield (
        "MindSpore MindIR",
        "mindspore",
        "mindir",
        out / "resnet50.mindir",
        export_s,
        (lambda x: graph(ms.Tensor(x)).asnumpy()),
    )


PATHS = {"tensorflow": tensorflow_paths, "mindspore": mindspore_paths}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("framework", choices=sorted(PATHS))
    parser.add_argument("--width", type=int, default=resnet.WIDTH, help="64: ResNet-50 itself")
    parser.add_argument("--images", type=Path, required=True, help="the timed batch (.npy)")
    parser.add_argument("--probe", type=Path, required=True, help="the images compared (.npy)")
    parser.add_argument("--out", type=Path, required=True, help="an existing folder")
    args = parser.parse_args()
    prof = profiles.current()
    images, probe = np.load(args.images), np.load(args.probe)
    done = []
    for name, fw, mode, file, export_s, run in PATHS[args.framework](
        resnet.init_weights(0, width=args.width), args.out
    ):
        np.save(args.out / f"{mode}_probe.npy", run(probe))
        records = []
        for task, x in (("latency", images[:1]), ("throughput", images)):
            m = bench.measure(
                lambda x=x, run=run: run(x),
                prof.warmup,
                prof.min_repeats,
                prof.min_time_s,
                prof.max_repeats,
                images_per_call=len(x),
                label=f"{name} {task}",
            )
            records.append(
                deploy.record(
                    m,
                    fw,
                    mode,
                    task,
                    prof.image_size,
                    notes=name,
                    model=deploy.model_id(args.width),
                    export_s=export_s if task == "throughput" else None,
                    where="its own process",
                ).to_json()
            )
        done.append({"name": name, "framework": fw, "mode": mode, "file": str(file),
                     "export_s": export_s, "records": records})  # fmt: skip
        print(f"{name}: exported in {export_s:.1f} s to {file.name}, run and timed", flush=True)
    (args.out / f"{args.framework}.json").write_text(json.dumps(done, default=str))


if __name__ == "__main__":
    main()
