"""TensorFlow adapter: a Keras 3 ResNet-50 (NHWC inside, NCHW at the edge) in three modes:
``eager``, ``function`` (``tf.function``: traced once, Grappler-optimised) and ``xla``
(``tf.function(jit_compile=True)``). Explicit ``ZeroPadding2D`` and ``"valid"`` convolutions pad
symmetrically as PyTorch does (Keras' ``"same"`` pads an even input bottom-right only).
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
from .._kit.cells import batch_of, check_cell, check_threads, host_batch
from ..contract import Prepared, Unsupported
from . import SPEC

__all__ = [
    "build_resnet50",
    "is_tf_function",
    "keras_name",
    "model_caller",
    "predict",
    "prepare",
    "prepare_model",
    "resnet50",
    "set_threads",
    "step_fn",
    "threads",
    "to_canonical",
    "to_nhwc",
    "train_step",
    "version",
]

#: the recipe's loss: mean softmax cross-entropy of logits against integer labels
LOSS = keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def version() -> str:
    return tf.__version__


def set_threads(n: int) -> None:
    """``n`` intra-op threads, one inter-op; TensorFlow fixes its pools when it first runs."""
    n = check_threads(n)
    if tuple(threads().values()) == (n, 1):
        return
    try:
        tf.config.threading.set_intra_op_parallelism_threads(n)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    except RuntimeError as exc:
        raise RuntimeError(
            f"TensorFlow's thread pools are already running ({exc}); call set_threads({n}) before "
            "TensorFlow runs anything, e.g. at the top of a fresh process or kernel"
        ) from exc


def threads() -> dict[str, int]:
    """The pool sizes TensorFlow is configured with (0: its default, one per core)."""
    return {
        "intra": tf.config.threading.get_intra_op_parallelism_threads(),
        "inter": tf.config.threading.get_inter_op_parallelism_threads(),
    }


def keras_name(canonical: str) -> str:
    """``layer1.0.conv1`` -> ``layer1_0_conv1``."""
    return canonical.replace(".", "_")


def _conv_bn(x, conv: resnet.Conv, dtype: str, relu: bool):
    name = keras_name(conv.conv)
    if conv.padding:
        x = keras.layers.ZeroPadding2D(conv.padding, name=f"{name}_pad", dtype=dtype)(x)
    x = keras.layers.Conv2D(
        conv.cout, conv.kernel, conv.stride, "valid", use_bias=False, name=name, dtype=dtype
    )(x)
    # Keras' momentum is 1 - PyTorch's (0.1): the same running-average update
    x = keras.layers.BatchNormalization(
        epsilon=resnet.BN_EPS, momentum=0.9, name=keras_name(conv.bn), dtype=dtype
    )(x)
    return keras.layers.ReLU(name=f"{name}_relu", dtype=dtype)(x) if relu else x


def resnet50(
    num_classes: int = 1000, dtype: str = "float32", width: int = resnet.WIDTH
) -> keras.Model:
    """An uninitialised ResNet-50 v1.5 (NHWC); ``dtype``: every layer's Keras dtype policy (the
    global policy stays untouched); the logits are float32."""
    images = keras.Input(shape=(None, None, 3), name="images")
    x = _conv_bn(images, resnet.stem(width), dtype, relu=True)
    x = keras.layers.ZeroPadding2D(1, name="maxpool_pad", dtype=dtype)(x)
    x = keras.layers.MaxPooling2D(3, strides=2, padding="valid", name="maxpool", dtype=dtype)(x)
    for block in resnet.blocks(width):
        shortcut = x
        for i, conv in enumerate(block.convs):
            x = _conv_bn(x, conv, dtype, relu=i < 2)
        if block.downsample is not None:
            shortcut = _conv_bn(shortcut, block.downsample, dtype, relu=False)
        name = keras_name(block.name)
        x = keras.layers.Add(name=f"{name}_add", dtype=dtype)([x, shortcut])
        x = keras.layers.ReLU(name=f"{name}_relu", dtype=dtype)(x)
    x = keras.layers.GlobalAveragePooling2D(name="avgpool", dtype=dtype)(x)
    x = keras.layers.Dense(num_classes, name="fc", dtype=dtype)(x)
    logits = keras.layers.Activation("linear", name="logits", dtype="float32")(x)
    return keras.Model(images, logits, name="resnet50")


def _tensors(width: int):
    """(canonical name, Keras layer, index in its weights, axes from canonical to Keras)."""
    for conv in resnet.all_convs(width):
        yield f"{conv.conv}.weight", keras_name(conv.conv), 0, (2, 3, 1, 0)  # OIHW -> HWIO
        for i, p in enumerate(("weight", "bias", "running_mean", "running_var")):
            yield f"{conv.bn}.{p}", keras_name(conv.bn), i, (0,)
    yield "fc.weight", "fc", 0, (1, 0)
    yield "fc.bias", "fc", 1, (0,)


def build_resnet50(weights: dict[str, np.ndarray], precision: str = "fp32") -> keras.Model:
    """A Keras ResNet-50 holding ``weights`` (call it with ``training=False`` for eval mode)."""
    num_classes = resnet.validate_weights(weights)
    policy = "mixed_bfloat16" if precision == "bf16" else "float32"  # bf16: float32 variables
    model = resnet50(num_classes, policy, resnet.width_of(weights))
    for name, layer, i, axes in _tensors(resnet.width_of(weights)):
        model.get_layer(layer).weights[i].assign(np.transpose(weights[name], axes))
    return model


def to_canonical(model: keras.Model) -> dict[str, np.ndarray]:
    """The model's weights in canonical names, order and layouts."""
    out = {}
    for name, layer, i, axes in _tensors(model.get_layer("conv1").filters):
        weight = model.get_layer(layer).weights[i].numpy()
        out[name] = np.ascontiguousarray(np.transpose(weight, np.argsort(axes)))
    return out


def to_nhwc(images: np.ndarray) -> np.ndarray:
    """Check an NCHW host batch and return it as NHWC float32."""
    return np.ascontiguousarray(resnet.check_images(images).transpose(0, 2, 3, 1))


def predict(model: keras.Model, images: np.ndarray) -> np.ndarray:
    """Eval-mode logits (float32 numpy) of an NCHW host batch."""
    return model(tf.constant(to_nhwc(images)), training=False).numpy()


def _optimizer(lr: float = recipe.TRAIN.lr, momentum: float = recipe.TRAIN.momentum):
    """Keras' SGD (v = momentum * v - lr * g; w += v) is PyTorch's for a constant rate."""
    r = recipe.TRAIN
    return keras.optimizers.SGD(lr, momentum, r.nesterov, weight_decay=r.weight_decay or None)


def _applied(opt: keras.optimizers.Optimizer) -> dict:
    """The hyper-parameters ``opt`` and :data:`LOSS` really use (compare with the recipe; Keras'
    sparse cross-entropy has no label smoothing)."""
    lr = float(keras.ops.convert_to_numpy(opt.learning_rate))
    mean = LOSS.reduction == "sum_over_batch_size"
    return recipe.applied(lr, opt.momentum, opt.nesterov, opt.weight_decay or 0.0, mean, 0.0)


def _recipe_loss(model: keras.Model, images, labels) -> tf.Tensor:
    return LOSS(labels, tf.cast(model(images, training=True), tf.float32))  # in float32


def _squares(model, *xs) -> tf.Tensor:
    """A learner's model's synthetic loss: the mean of its squared floating-point outputs."""
    outputs = tf.nest.flatten(model_caller(model, training=True)(*xs))
    floats = [tf.cast(t, tf.float32) for t in outputs if t.dtype.is_floating]
    return tf.add_n([tf.reduce_mean(tf.square(t)) for t in floats])


def _sgd_step(model, opt, loss_of: Callable, *inputs) -> tf.Tensor:
    """A GradientTape over ``loss_of(model, *inputs)``, one optimizer update; the loss."""
    with tf.GradientTape() as tape:
        loss = loss_of(model, *inputs)
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    return loss


def step_fn(model, mode: str, opt=None, loss_of: Callable = _recipe_loss) -> Callable:
    """``model``'s step as ``mode`` runs it (eager: unchanged; function: traced; xla:
    XLA-compiled): inference, or with an optimizer ``opt`` one update of ``loss_of(model,
    *inputs)`` returning the loss. A partial, not a closure: tf.function's retracing warning
    counts traces per Python code object."""
    if opt is None:
        fn = model_caller(model)
    else:
        opt.build(model.trainable_variables)  # its slots now, not inside a traced graph
        fn = functools.partial(_sgd_step, model, opt, loss_of)
    return fn if mode == "eager" else tf.function(fn, jit_compile=(mode == "xla"))


def train_step(
    weights: dict[str, np.ndarray],
    images: np.ndarray,
    labels: np.ndarray,
    lr: float = recipe.TRAIN.lr,
    momentum: float = recipe.TRAIN.momentum,
) -> tuple[float, dict[str, np.ndarray]]:
    """One eager SGD step: the loss before it and the new canonical weights (Keras folds the
    biased batch variance into ``running_var``, PyTorch the unbiased one)."""
    model, batch = build_resnet50(weights), map(tf.constant, (to_nhwc(images), labels))
    loss = _sgd_step(model, _optimizer(lr, momentum), _recipe_loss, *batch)
    return float(loss.numpy()), to_canonical(model)


def _bf16_conv() -> None:
    """A tiny bfloat16 convolution: oneDNN refuses it where its ISA has no bf16 path."""
    x, w = tf.ones([1, 8, 8, 3], tf.bfloat16), tf.ones([3, 3, 3, 4], tf.bfloat16)
    tf.nn.conv2d(x, w, 1, "SAME").numpy()


def _prepared(fn: Callable, hosts: list, cell: tuple[str, str], notes: str, **extra) -> Prepared:
    """The benchmark step of the cell (mode, device): it copies the host arrays in, runs ``fn``
    and returns its outputs as NumPy (the loss, for training)."""
    mode, device = cell
    if device == "gpu" and not tf.config.list_physical_devices("GPU"):
        raise Unsupported("no GPU visible to TensorFlow: install 'tensorflow[and-cuda]' (Linux)")

    def step() -> object:
        return tf.nest.map_structure(lambda t: t.numpy(), fn(*map(tf.constant, hosts)))

    notes = f"{dict(SPEC.mode_notes)[mode]}{notes} on {device.upper()}"
    return Prepared(step, batch_of(hosts), notes, **extra)


def prepare(
    weights: dict[str, np.ndarray],
    mode: str,
    task: str,
    batch_size: int,
    precision: str = "fp32",
    image_size: int = 224,
    device: str = "cpu",
) -> Prepared:
    """One benchmark step: the host batch in, one inference batch (``training=False``) or
    training step, the result out. ``bf16``: the Keras ``mixed_bfloat16`` policy, its inference
    step carrying its accuracy cost against the fp32 model."""
    check_cell(SPEC, mode, task, batch_size, precision, device)
    if precision == "bf16" and (why := kernel_support(SPEC.name, version(), "bf16", _bf16_conv)):
        raise Unsupported(why)
    images, labels = host_batch(weights, batch_size, image_size)
    train, opt = task == "train", _optimizer()
    fn = step_fn(build_resnet50(weights, precision), mode, opt if train else None)

    def check() -> dict:
        fp32, ref = build_resnet50(weights), f"TensorFlow {version()} fp32 eager Keras model"
        lowp = lambda x: fn(tf.constant(to_nhwc(x))).numpy()
        return acc.cost(lambda x: predict(fp32, x), lowp, image_size, batch_size, ref)

    return _prepared(
        fn,
        [to_nhwc(images), labels] if train else [to_nhwc(images)],
        (mode, device),
        ", Keras mixed_bfloat16 policy" if precision == "bf16" else "",
        recipe=_applied(opt) if train else None,
        accuracy=check if precision != "fp32" and not train else None,
    )


# --------------------------------------------------------------------------- a learner's model


def is_tf_function(model: object) -> bool:
    return isinstance(model, tf.types.experimental.PolymorphicFunction)


def _call_layer(layer: keras.layers.Layer, training: bool, *xs):
    return layer(xs[0] if len(xs) == 1 else list(xs), training=training)


def model_caller(model: object, training: bool = False) -> Callable:
    """The Python callable that runs ``model`` eagerly on tensors: a Keras model or layer in
    inference mode (or ``training``; one input as is, several as a list), a ``tf.function``'s
    own Python function, or a plain function of tensors."""
    if isinstance(model, keras.layers.Layer):  # models are layers too
        return functools.partial(_call_layer, model, training)
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
    """The benchmark step of a learner's model: inference with ``training=False``, or (a Keras
    model or layer) a synthetic loss (the mean of the squared floating-point outputs) and one
    step of the recipe's SGD."""
    check_cell(SPEC, mode, task, batch_of(inputs), precision, device)
    if precision == "bf16":
        raise Unsupported(
            "a learner's Keras model computes in the dtype policy it was built with: build it "
            "under keras.mixed_precision.set_global_policy('mixed_bfloat16') to measure bf16"
        )
    hosts = [np.ascontiguousarray(a) for a in inputs]
    if task != "train":
        return _prepared(step_fn(model, mode), hosts, (mode, device), "")
    if not isinstance(model, keras.layers.Layer) or not model.trainable_variables:
        raise Unsupported("training needs a Keras model or layer with trainable variables")
    fn = step_fn(model, mode, _optimizer(), _squares)
    return _prepared(fn, hosts, (mode, device), "; synthetic loss: mean of the squared outputs")
