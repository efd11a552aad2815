"""TensorFlow adapter: a hand-written Keras 3 ResNet-50 in three execution modes.

Import it through ``labkit.frameworks.get("tensorflow")`` (after ``import labkit``, which sets the
protobuf option that lets TensorFlow and MindSpore share a process). Images are NHWC inside
(channels-last) and NCHW at the contract's edge. Explicit ``ZeroPadding2D`` and ``"valid"``
convolutions pad symmetrically as PyTorch does (Keras' ``"same"`` pads an even input on the
bottom-right only); the max-pool's zero padding equals ``-inf`` after a ReLU.

Modes: ``eager`` (each op dispatched as reached), ``function`` (``tf.function``: traced once,
Grappler-optimised), ``xla`` (``tf.function(jit_compile=True)``: compiled and fused by XLA).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import keras
import numpy as np
import tensorflow as tf

from ... import recipe, resnet
from .. import kernel_support
from .._kit import accuracy as acc
from .._kit.cells import check_cell, check_choice, check_threads, host_batch
from ..contract import Prepared, Unsupported
from . import SPEC

__all__ = [
    "MODES",
    "MODE_NOTES",
    "SPEC",
    "applied_recipe",
    "build_resnet50",
    "is_tf_function",
    "loss_fn",
    "model_caller",
    "optimizer",
    "predict",
    "prepare",
    "prepare_model",
    "set_threads",
    "threads",
    "to_canonical",
    "train_step",
    "version",
]

NAME = SPEC.name
MODES = SPEC.modes

#: Keras dtype policy per labkit precision; bf16 computes in bfloat16 and keeps float32 variables
POLICIES: dict[str, str] = {"fp32": "float32", "bf16": "mixed_bfloat16"}
#: why there is no int8 cell: TensorFlow's int8 path is a converter's, not a graph mode's
INT8_WHY = (
    "TensorFlow has no int8 path in tf.function or XLA on a CPU: its int8 inference is TF "
    "Lite's (LiteRT) post-training quantisation, a converter that notebook 07 shows; the lab's "
    "int8 benchmark path is ONNX Runtime's static quantisation (--frameworks onnxruntime)"
)

#: how each mode is realised (recorded with every benchmark result)
MODE_NOTES: dict[str, str] = {
    "eager": "eager ops",
    "function": "tf.function (Grappler graph)",
    "xla": "tf.function(jit_compile=True)",
}

BN_MOMENTUM = 0.9  # Keras' momentum is 1 - PyTorch's (0.1): the same running-average update


def version() -> str:
    return tf.__version__


def set_threads(n: int) -> None:
    """Run TensorFlow ops on ``n`` threads (intra-op) with one op at a time (inter-op = 1).

    TensorFlow fixes its thread pools when it first runs an op, so call this before anything else
    touches TensorFlow (the benchmark runner does it first thing in each fresh subprocess). A
    later call with a different count raises ``RuntimeError`` saying so.
    """
    n = check_threads(n)
    threading = tf.config.threading
    current = (
        threading.get_intra_op_parallelism_threads(),
        threading.get_inter_op_parallelism_threads(),
    )
    if current == (n, 1):
        return
    try:
        threading.set_intra_op_parallelism_threads(n)
        threading.set_inter_op_parallelism_threads(1)
    except RuntimeError as exc:
        raise RuntimeError(
            f"TensorFlow's thread pools are already running ({exc}); call set_threads({n}) before "
            "TensorFlow runs anything, e.g. at the top of a fresh process or kernel"
        ) from exc


def threads() -> dict[str, int]:
    """The thread pool sizes TensorFlow is configured with: ``{"intra": N, "inter": M}``
    (0 means TensorFlow's default, one per core)."""
    threading = tf.config.threading
    return {
        "intra": threading.get_intra_op_parallelism_threads(),
        "inter": threading.get_inter_op_parallelism_threads(),
    }


# --------------------------------------------------------------------------- the model


def keras_name(canonical: str) -> str:
    """The Keras layer name of a canonical module name: ``layer1.0.conv1`` -> ``layer1_0_conv1``."""
    return canonical.replace(".", "_")


def _conv_bn(x, conv: resnet.Conv, dtype: str, relu: bool):
    """Convolution (explicit symmetric padding, no bias) -> BatchNorm -> optional ReLU."""
    name = keras_name(conv.conv)
    if conv.padding:
        x = keras.layers.ZeroPadding2D(conv.padding, name=f"{name}_pad", dtype=dtype)(x)
    x = keras.layers.Conv2D(
        conv.cout,
        conv.kernel,
        strides=conv.stride,
        padding="valid",
        use_bias=False,
        name=name,
        dtype=dtype,
    )(x)
    x = keras.layers.BatchNormalization(
        epsilon=resnet.BN_EPS, momentum=BN_MOMENTUM, name=keras_name(conv.bn), dtype=dtype
    )(x)
    if relu:
        x = keras.layers.ReLU(name=f"{name}_relu", dtype=dtype)(x)
    return x


def _bottleneck(x, block: resnet.Block, dtype: str):
    shortcut = x
    for i, conv in enumerate(block.convs):
        x = _conv_bn(x, conv, dtype, relu=i < 2)
    if block.downsample is not None:
        shortcut = _conv_bn(shortcut, block.downsample, dtype, relu=False)
    name = keras_name(block.name)
    x = keras.layers.Add(name=f"{name}_add", dtype=dtype)([x, shortcut])
    return keras.layers.ReLU(name=f"{name}_relu", dtype=dtype)(x)


def resnet50(
    num_classes: int = 1000, dtype: str = "float32", width: int = resnet.WIDTH
) -> keras.Model:
    """An uninitialised ResNet-50 v1.5 (NHWC, any image size that is a multiple of 32).

    ``dtype`` is a Keras dtype policy for every layer ("float32" or "mixed_bfloat16"); passing it
    per layer leaves Keras' global policy untouched. The logits are always float32. ``width``:
    :func:`labkit.resnet.stem`'s channels (64 is ResNet-50 itself).
    """
    images = keras.Input(shape=(None, None, 3), name="images")
    x = _conv_bn(images, resnet.stem(width), dtype, relu=True)
    x = keras.layers.ZeroPadding2D(1, name="maxpool_pad", dtype=dtype)(x)
    x = keras.layers.MaxPooling2D(3, strides=2, padding="valid", name="maxpool", dtype=dtype)(x)
    for block in resnet.blocks(width):
        x = _bottleneck(x, block, dtype)
    x = keras.layers.GlobalAveragePooling2D(name="avgpool", dtype=dtype)(x)
    x = keras.layers.Dense(num_classes, name="fc", dtype=dtype)(x)
    logits = keras.layers.Activation("linear", name="logits", dtype="float32")(x)
    return keras.Model(images, logits, name="resnet50")


def load_weights(model: keras.Model, weights: dict[str, np.ndarray]) -> None:
    """Copy canonical weights into ``model`` (OIHW -> HWIO kernels, (out, in) -> (in, out) fc)."""
    resnet.validate_weights(weights, num_classes=model.get_layer("fc").units)
    for conv in resnet.all_convs(resnet.width_of(weights)):
        model.get_layer(keras_name(conv.conv)).set_weights(
            [weights[f"{conv.conv}.weight"].transpose(2, 3, 1, 0)]
        )
        model.get_layer(keras_name(conv.bn)).set_weights(
            [weights[f"{conv.bn}.{p}"] for p in ("weight", "bias", "running_mean", "running_var")]
        )
    model.get_layer("fc").set_weights([weights["fc.weight"].T, weights["fc.bias"]])


def build_resnet50(weights: dict[str, np.ndarray], precision: str = "fp32") -> keras.Model:
    """A Keras ResNet-50 holding ``weights``; a missing or misshaped tensor raises ``ValueError``.

    Keras models have no eval mode of their own: call them with ``training=False`` (as
    :func:`predict` does) to use the BatchNorm running statistics.
    """
    num_classes = resnet.validate_weights(weights)
    model = resnet50(num_classes, _policy(precision), resnet.width_of(weights))
    load_weights(model, weights)
    return model


def to_canonical(model: keras.Model) -> dict[str, np.ndarray]:
    """The model's weights in canonical names and layouts (the inverse of :func:`load_weights`)."""
    out: dict[str, np.ndarray] = {}
    width = model.get_layer("conv1").filters
    for conv in resnet.all_convs(width):
        (kernel,) = model.get_layer(keras_name(conv.conv)).get_weights()
        out[f"{conv.conv}.weight"] = np.ascontiguousarray(kernel.transpose(3, 2, 0, 1))
        gamma, beta, mean, var = model.get_layer(keras_name(conv.bn)).get_weights()
        out.update(
            {
                f"{conv.bn}.weight": gamma,
                f"{conv.bn}.bias": beta,
                f"{conv.bn}.running_mean": mean,
                f"{conv.bn}.running_var": var,
            }
        )
    kernel, bias = model.get_layer("fc").get_weights()
    out["fc.weight"] = np.ascontiguousarray(kernel.T)
    out["fc.bias"] = bias
    return {name: out[name] for name in resnet.param_shapes(len(out["fc.bias"]), width)}


def to_nhwc(images: np.ndarray) -> np.ndarray:
    """Check an NCHW host batch (its size must suit ResNet-50) and return it as NHWC float32."""
    images = resnet.check_images(images)
    return np.ascontiguousarray(images.transpose(0, 2, 3, 1))


def predict(model: keras.Model, images: np.ndarray) -> np.ndarray:
    """Eval-mode logits (float32 numpy) of an NCHW host batch."""
    return model(tf.constant(to_nhwc(images)), training=False).numpy()


#: the recipe's loss: softmax cross-entropy of logits against integer labels, batch mean
#: (Keras' "sum_over_batch_size" reduction; PyTorch's ``CrossEntropyLoss``)
LOSS = keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def loss_fn(labels: tf.Tensor, logits: tf.Tensor) -> tf.Tensor:
    """Mean softmax cross-entropy over the batch, computed in float32 (also under bf16)."""
    return LOSS(labels, tf.cast(logits, tf.float32))


def optimizer(
    lr: float = recipe.TRAIN.lr, momentum: float = recipe.TRAIN.momentum
) -> keras.optimizers.SGD:
    """The recipe's optimizer (:data:`labkit.recipe.TRAIN`).

    Keras' SGD update (v = momentum * v - lr * g; w += v) is PyTorch's (v = momentum * v + g;
    w -= lr * v) for a constant learning rate; the first step of both is w -= lr * g.
    """
    r = recipe.TRAIN
    return keras.optimizers.SGD(
        learning_rate=lr,
        momentum=momentum,
        nesterov=r.nesterov,
        weight_decay=r.weight_decay or None,
    )


def applied_recipe(opt: keras.optimizers.Optimizer, loss: keras.losses.Loss = LOSS) -> dict:
    """The hyper-parameters ``opt`` and ``loss`` really use (compare with the recipe)."""
    return recipe.applied(
        float(keras.ops.convert_to_numpy(opt.learning_rate)),
        opt.momentum,
        opt.nesterov,
        opt.weight_decay or 0.0,
        loss.reduction == "sum_over_batch_size",
        getattr(loss, "label_smoothing", 0.0) or 0.0,
    )


def _forward(model: keras.Model, images: tf.Tensor) -> tf.Tensor:
    return model(images, training=False)


def _sgd_step(
    model: keras.Model, optimizer: keras.optimizers.Optimizer, images: tf.Tensor, labels: tf.Tensor
) -> tf.Tensor:
    """Forward in training mode, backward with a GradientTape, one optimizer update; -> loss."""
    with tf.GradientTape() as tape:
        loss = loss_fn(labels, model(images, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


def check_mode(mode: str) -> str:
    return check_choice(NAME, "mode", mode, MODES)


def _wrap(fn: Callable, mode: str) -> Callable:
    """``fn`` as the mode runs it: unchanged (eager), traced (function), XLA-compiled (xla)."""
    check_mode(mode)
    return fn if mode == "eager" else tf.function(fn, jit_compile=(mode == "xla"))


def inference_fn(model: keras.Model, mode: str = "eager") -> Callable[[tf.Tensor], tf.Tensor]:
    """A callable NHWC tensor -> logits tensor running ``model`` in eval mode, in ``mode``.

    In ``function`` and ``xla`` mode the first call traces (and compiles); later calls with the
    same input shape and dtype reuse that graph (``fn.experimental_get_tracing_count()``).
    """
    # a fresh partial per call: tf.function's retracing warning counts traces per Python code
    # object, so a lambda here would warn when a process prepares several cells
    return _wrap(functools.partial(_forward, model), mode)


def train_fn(
    model: keras.Model,
    mode: str = "eager",
    lr: float = recipe.TRAIN.lr,
    momentum: float = recipe.TRAIN.momentum,
    opt: keras.optimizers.Optimizer | None = None,
) -> Callable[[tf.Tensor, tf.Tensor], tf.Tensor]:
    """A callable (NHWC images, labels) -> loss doing one SGD-with-momentum step on ``model``
    (with ``opt``, by default a new :func:`optimizer` with ``lr`` and ``momentum``)."""
    opt = opt or optimizer(lr, momentum)
    opt.build(model.trainable_variables)  # create its slots now, not inside a traced graph
    return _wrap(functools.partial(_sgd_step, model, opt), mode)


def train_step(
    weights: dict[str, np.ndarray],
    images: np.ndarray,
    labels: np.ndarray,
    lr: float = recipe.TRAIN.lr,
    momentum: float = recipe.TRAIN.momentum,
) -> tuple[float, dict[str, np.ndarray]]:
    """One eager SGD step from ``weights``; returns the loss and the updated canonical weights.

    BatchNorm uses the batch statistics and updates its running averages, as PyTorch's train mode
    does, with one difference: Keras folds the biased batch variance into ``running_var`` where
    PyTorch uses the unbiased one, so those buffers differ slightly after a step (the trainable
    weights do not).
    """
    model = build_resnet50(weights)
    step = train_fn(model, "eager", lr, momentum)
    loss = step(tf.constant(to_nhwc(images)), tf.constant(np.asarray(labels, dtype=np.int64)))
    return float(loss.numpy()), to_canonical(model)


# --------------------------------------------------------------------------- benchmarks


def _policy(precision: str) -> str:
    return POLICIES[check_choice(NAME, "precision", precision, tuple(POLICIES))]


def _device_name(device: str) -> str:
    if device == "cpu":
        return "/CPU:0"
    if not tf.config.list_physical_devices("GPU"):
        raise Unsupported(
            "no GPU visible to TensorFlow; install the CUDA build: "
            "pip install 'tensorflow[and-cuda]' (Linux, NVIDIA driver required) in place of "
            "tensorflow-cpu"
        )
    return "/GPU:0"


def _bf16_conv() -> None:
    """A tiny bfloat16 convolution on the CPU: oneDNN refuses it where the ISA it may use has
    no bf16 path ("could not create a primitive descriptor", e.g. ONEDNN_MAX_CPU_ISA=AVX2)."""
    with tf.device("/CPU:0"):
        x, w = tf.ones([1, 8, 8, 3], tf.bfloat16), tf.ones([3, 3, 3, 4], tf.bfloat16)
        tf.nn.conv2d(x, w, 1, "SAME").numpy()


def prepare(
    weights: dict[str, np.ndarray],
    mode: str,
    task: str,
    batch_size: int,
    precision: str = "fp32",
    image_size: int = 224,
    device: str = "cpu",
) -> Prepared:
    """The benchmark callable for one cell; see :mod:`labkit.bench`.

    The host batch (numpy, NHWC) is made here; each ``step()`` converts it to a tensor on the
    device, runs one inference batch (``training=False``) or one training step, and copies the
    logits or loss back to the host (``.numpy()``), which waits for the work to finish. The first
    call of ``function`` and ``xla`` traces (and compiles) the step. Training follows the lab's
    recipe (:data:`labkit.recipe.TRAIN`). ``bf16`` builds the model under the Keras
    ``mixed_bfloat16`` policy, and its inference step carries its accuracy cost against the
    fp32 model (``Prepared.accuracy``); ``int8`` raises :class:`Unsupported` (:data:`INT8_WHY`).
    """
    check_cell(NAME, MODES, mode, task, batch_size, precision, device)
    if precision == "int8":
        raise Unsupported(INT8_WHY)
    device_name = _device_name(device)
    if precision == "bf16" and device == "cpu":
        why = kernel_support(NAME, tf.__version__, "bf16", _bf16_conv)
        if why:
            raise Unsupported(why)
    images, labels = host_batch(weights, batch_size, image_size)
    images = to_nhwc(images)
    notes = MODE_NOTES[mode]
    if precision == "bf16":
        notes += ", Keras mixed_bfloat16 policy"
    applied = None
    with tf.device(device_name):
        model = build_resnet50(weights, precision)
        if task == "train":
            opt = optimizer()
            fn = train_fn(model, mode, opt=opt)
            applied = applied_recipe(opt)

            def step() -> np.ndarray:
                with tf.device(device_name):
                    return fn(tf.constant(images), tf.constant(labels)).numpy()
        else:
            fn = inference_fn(model, mode)

            def step() -> np.ndarray:
                with tf.device(device_name):
                    return fn(tf.constant(images)).numpy()

    def lowp(x: np.ndarray) -> np.ndarray:
        with tf.device(device_name):
            return np.asarray(fn(tf.constant(to_nhwc(x))).numpy(), np.float32)

    def check() -> dict:
        with tf.device(device_name):
            fp32 = build_resnet50(weights)
        ref = f"TensorFlow {tf.__version__} fp32 eager Keras model"
        return acc.cost(lambda x: predict(fp32, x), lowp, image_size, batch_size, ref)

    lowp_inference = precision != "fp32" and task != "train"
    return Prepared(
        step=step,
        batch_size=batch_size,
        notes=f"{notes} on {device_name}",
        recipe=applied,
        accuracy=check if lowp_inference else None,
    )


# --------------------------------------------------------------------------- a learner's model


def is_tf_function(model: object) -> bool:
    return isinstance(model, tf.types.experimental.PolymorphicFunction)


def model_caller(model: object) -> Callable:
    """The Python callable that runs ``model`` eagerly on tensors: a Keras model or layer in
    inference mode (one input as is, several as a list), a ``tf.function``'s own Python
    function, or a plain function of tensors."""
    if isinstance(model, keras.layers.Layer):  # models are layers too

        def call(*xs):
            return model(xs[0] if len(xs) == 1 else list(xs), training=False)

        return call
    if is_tf_function(model):
        return model.python_function
    if callable(model):
        return model
    raise ValueError(f"expected a Keras model or layer, or a function, got {type(model).__name__}")


def prepare_model(
    model: object,
    inputs: list[np.ndarray],
    mode: str,
    task: str,
    precision: str = "fp32",
    device: str = "cpu",
) -> Prepared:
    """The benchmark step of a learner's model: the same call in each of the three modes.

    Inference calls the model with ``training=False``; ``train`` (a Keras model or layer
    only) runs a synthetic loss (the mean of the squared floating-point outputs), the gradient
    and one SGD-with-momentum update. Each step converts the host inputs to tensors and copies
    the outputs back (``.numpy()``), which waits for the work.
    """
    batch = int(inputs[0].shape[0]) if inputs and np.ndim(inputs[0]) else 1
    check_cell(NAME, MODES, mode, task, batch, precision, device)
    if precision == "int8":
        raise Unsupported(INT8_WHY)
    if precision == "bf16":
        raise Unsupported(
            "a learner's Keras model computes in the dtype policy it was built with: build it "
            "under keras.mixed_precision.set_global_policy('mixed_bfloat16') to measure bf16"
        )
    device_name = _device_name(device)
    call = model_caller(model)
    hosts = [np.ascontiguousarray(a) for a in inputs]
    notes = MODE_NOTES[mode]
    with tf.device(device_name):
        if task == "train":
            if not isinstance(model, keras.layers.Layer) or not model.trainable_variables:
                raise Unsupported("training needs a Keras model or layer with trainable variables")
            opt = optimizer()  # the lab's recipe
            opt.build(model.trainable_variables)

            def train(*xs):
                with tf.GradientTape() as tape:
                    out = model(xs[0] if len(xs) == 1 else list(xs), training=True)
                    floats = [t for t in tf.nest.flatten(out) if t.dtype.is_floating]
                    loss = tf.add_n(
                        [tf.reduce_mean(tf.square(tf.cast(t, tf.float32))) for t in floats]
                    )
                grads = tape.gradient(loss, model.trainable_variables)
                opt.apply_gradients(zip(grads, model.trainable_variables))
                return loss

            fn = _wrap(train, mode)
            notes += "; synthetic loss: mean of the squared outputs"
        else:
            fn = _wrap(call, mode)

    def step() -> list:
        with tf.device(device_name):
            out = fn(*[tf.constant(a) for a in hosts])
            return [t.numpy() for t in tf.nest.flatten(out)]

    return Prepared(step=step, batch_size=batch, notes=f"{notes} on {device_name}")
