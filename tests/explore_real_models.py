"""Real third-party model code, tiny and with random weights, for tests/test_explore_real.py.

Hugging Face ``transformers`` models built from their configs (no download: nothing is fetched,
``HF_HUB_OFFLINE=1`` is set), Keras applications with ``weights=None``, an LSTM classifier, and
a model that never returns. Each builder takes no arguments (a spec names it:
``tests/explore_real_models.py:bert``); some return ``(model, example_args, example_kwargs)``.
"""

import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch
from torch import nn

BATCH, SEQ, VOCAB = 2, 16, 100


def _tokens(seed: int = 0):
    """Token ids, and an attention mask whose second row is padded after 10 tokens."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, VOCAB, (BATCH, SEQ), generator=g)
    mask = torch.ones(BATCH, SEQ, dtype=torch.long)
    mask[1, 10:] = 0
    return ids, mask


def bert():
    """A BERT-like encoder (2 layers, width 32) returning a dict-like ModelOutput."""
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    return BertModel(config).eval()


def bert_with_mask():
    """The encoder with a real attention mask, given through the spec."""
    ids, mask = _tokens()
    return bert(), (ids,), {"attention_mask": mask}


def gpt2_model():
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=2, n_positions=64, bos_token_id=0,
        eos_token_id=0,
    )  # fmt: skip
    return GPT2LMHeadModel(config).eval()


def gpt2():
    """A GPT-2-like decoder as it comes: its output holds a DynamicCache (past_key_values)."""
    return gpt2_model()


def gpt2_no_cache():
    """The decoder called with use_cache=False, given through the spec."""
    ids, mask = _tokens()
    return gpt2_model(), (ids,), {"attention_mask": mask, "use_cache": False}


def vit():
    """A ViT-like image encoder over 2x3x32x32 (channels first)."""
    from transformers import ViTConfig, ViTModel

    torch.manual_seed(0)
    config = ViTConfig(
        image_size=32,
        patch_size=8,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
    )
    return ViTModel(config).eval()


class LSTMClassifier(nn.Module):
    """Token ids -> embedding -> LSTM -> the last step's class scores."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 32)
        self.lstm = nn.LSTM(32, 32, batch_first=True)
        self.head = nn.Linear(32, 4)

    def forward(self, ids):
        out, _ = self.lstm(self.embed(ids))
        return self.head(out[:, -1])


def lstm():
    torch.manual_seed(0)
    return LSTMClassifier().eval()


class NoOnnx(nn.Module):
    """A running maximum (aten.cummax): exports with torch.export, but has no ONNX translation."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        return torch.cummax(self.lin(x), dim=-1).values


def no_onnx():
    torch.manual_seed(0)
    return NoOnnx().eval()


class Hangs(nn.Module):
    """Never returns: stands in for a model stuck in a loop."""

    def forward(self, x):
        while True:
            time.sleep(0.5)


def hangs():
    return Hangs()


def keras_mobilenet():
    """Keras' MobileNetV2 with random weights at 32x32: its input signature fixes the size,
    and its output is the same for every input (random weights saturate the classifier)."""
    import keras

    keras.utils.set_random_seed(0)
    return keras.applications.MobileNetV2(weights=None, input_shape=(32, 32, 3), classes=10)


def keras_cnn():
    """A channels-last Keras CNN taking any image size: (None, None, None, 3)."""
    import keras

    keras.utils.set_random_seed(0)
    inputs = keras.Input((None, None, 3))
    x = keras.layers.Conv2D(8, 3, padding="same", activation="relu")(inputs)
    x = keras.layers.GlobalAveragePooling2D()(x)
    return keras.Model(inputs, keras.layers.Dense(4)(x), name="cnn_channels_last")
