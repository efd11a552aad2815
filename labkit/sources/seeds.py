"""The two source articles as data (``labkit/data/sources.toml``): their arguments, prose
figures, comparisons, benchmark tables, scenarios, decision flow and the systems the lab cannot
run, each table also as Markdown. Every figure is typed once there; texts quoting one are filled
from it here (:func:`words`).
"""

from __future__ import annotations

from types import SimpleNamespace as Row

from ..frameworks import spec
from ..util import data_file, stats, tables

# fmt: off
__all__ = [
    "ARTICLES", "BASELINE", "COMPARISON", "DATA", "DECISION_FLOW", "DISTRIBUTED", "EPOCH_IMAGES",
    "FIGURES", "INFERENCE", "INFERENCE_DEVICES", "INFERENCE_SETTING", "MOBILE", "OUT_OF_REACH",
    "SCENARIOS", "SUMMARY", "TRAINING", "TRAINING_SETTING", "capability_markdown",
    "comparison_markdown", "decision_flow_markdown", "display", "figure", "inference",
    "inference_markdown", "inference_ratio", "out_of_reach", "out_of_reach_markdown",
    "scaling_efficiency", "scenarios_markdown", "training", "training_markdown", "training_ratio",
    "words",
]
# fmt: on

DATA = data_file("sources")


def display(name: str) -> str:
    """A framework's display name (the registry's)."""
    return spec(name).display


def _find(rows, what: str, **key):
    found = [r for r in rows if all(getattr(r, k) == v for k, v in key.items())]
    if not found:
        have = ", ".join("/".join(str(getattr(r, k)) for k in key) for r in rows)
        raise ValueError(f"no {what} {'/'.join(map(str, key.values()))}: there are {have}")
    return found[0]


def _figure(key: str, f: dict) -> Row:
    """A percentage the prose states, as a ratio range (1.2 = 20% faster, 0.9 = 10% less)."""
    a, b = sorted(round(abs(x - 1) * 100) for x in (f["low"], f["high"]))
    return Row(key=key, **f, percent=f"{a}-{b}%", range=f"{f['low']:g}x to {f['high']:g}x",
               statement=f["template"].format(percent=f"{a}-{b}%"))  # fmt: skip


FIGURES = tuple(_figure(k, v) for k, v in DATA["figure"].items())
TRAINING_SETTING = DATA["training"]["setting"]
EPOCH_IMAGES = DATA["training"]["epoch_images"]
TRAINING = tuple(Row(**r) for r in DATA["training"]["rows"])
INFERENCE_SETTING, BASELINE = DATA["inference"]["setting"], DATA["inference"]["baseline"]
INFERENCE_DEVICES: dict[str, str] = DATA["inference"]["devices"]
INFERENCE = tuple(Row(**r) for r in DATA["inference"]["rows"])


def figure(key: str):
    return _find(FIGURES, "figure", key=key)


def training(framework: str, mode: str):
    return _find(TRAINING, "training table row", framework=framework, mode=mode)


def inference(framework: str):
    return _find(INFERENCE, "inference table row", framework=framework)


def training_ratio(num: tuple[str, str], den: tuple[str, str]) -> float:
    """The single-A100 throughput ratio the training table implies."""
    return training(*num).one_gpu / training(*den).one_gpu


def inference_ratio(num: str, den: str, device: str = "cpu_fps") -> float:
    """The FPS ratio the inference table implies on one of its devices."""
    if device not in INFERENCE_DEVICES:
        raise ValueError(f"device must be one of {', '.join(INFERENCE_DEVICES)}, got {device!r}")
    return getattr(inference(num), device) / getattr(inference(den), device)


def scaling_efficiency(row) -> float:
    """Eight-GPU throughput over eight times the one-GPU throughput."""
    return stats.scaling_efficiency(row.eight_gpus, row.one_gpu, 8)


def _fps(row, devices) -> str:
    return "/".join(f"{getattr(row, d):g}" for d in devices)


def _range(device: str) -> str:
    values = [getattr(r, device) for r in INFERENCE]
    return f"{min(values):g}-{max(values):g}"


def _vs_onnx(row) -> str:
    return f"{inference_ratio(row.framework, BASELINE):.2f}x"


#: what texts in the data file may quote, each written from the tables
WORDS: dict[str, str] = {f.key: f.percent for f in FIGURES} | {
    "training_rows": ", ".join(f"{r.label} {r.one_gpu:g} ({r.eight_gpus:g})" for r in TRAINING),
    "training_one_gpu": " / ".join(f"{r.one_gpu:g}" for r in TRAINING) + " samples/s",
    "training_spread": f"{max(r.one_gpu for r in TRAINING) / min(r.one_gpu for r in TRAINING) - 1:.0%}",
    "inference_devices": " / ".join(INFERENCE_DEVICES.values()),
    "inference_rows": ", ".join(f"{r.label} {_fps(r, INFERENCE_DEVICES)}" for r in INFERENCE),
    "inference_ranges": " / ".join(_range(d) for d in INFERENCE_DEVICES) + " FPS",
    "cpu_vs_onnx": " and ".join(f"{r.label} {r.cpu_fps:g} FPS ({_vs_onnx(r)})" for r in INFERENCE
                                if r.framework != BASELINE) + f" vs {inference(BASELINE).label} "
                   f"{inference(BASELINE).cpu_fps:g}",
}  # fmt: skip


def words(text: str) -> str:
    """A text of the data file with its quoted figures filled in."""
    return text.format(**WORDS)


ARTICLES = tuple(Row(**{**a, "argues": tuple(map(words, a["argues"]))}) for a in DATA["article"])
COMPARISON = tuple(Row(**c) for c in DATA["comparison"])
DISTRIBUTED = tuple(Row(**c) for c in DATA["distributed"])
MOBILE = tuple(Row(**c) for c in DATA["mobile"])
SCENARIOS = tuple(
    Row(**{**s, "recommended": tuple(s["recommended"]), "reasons": tuple(map(words, s["reasons"]))})
    for s in DATA["scenario"]
)
DECISION_FLOW = tuple(Row(**f) for f in DATA["flow"])
SUMMARY: dict[str, str] = DATA["summary"]


def _out_of_reach(e: dict) -> Row:
    parts = [e["claim"]] if e["claim"] else []
    devices = e.get("devices", [])
    if len(e.get("fps", [])) == 1:
        row = inference(e["fps"][0])
        on = ", ".join(f"{getattr(row, d):g} on the {INFERENCE_DEVICES[d]}" for d in devices)
        parts.append(f"{row.label}: {on} (ResNet-50, frames per second)")
    elif e.get("fps"):
        rows = ", ".join(f"{inference(f).label} {_fps(inference(f), devices)}" for f in e["fps"])
        parts.append(f"on a {INFERENCE_DEVICES[devices[0]]}, frames per second: {rows}")
    if e.get("figure"):
        parts.append(figure(e["figure"]).statement)
    keep = ("key", "name", "needs", "command", "where")
    return Row(**{k: e[k] for k in keep}, claim="; ".join(parts))


OUT_OF_REACH = tuple(_out_of_reach(e) for e in DATA["out_of_reach"])


def out_of_reach(key: str):
    return _find(OUT_OF_REACH, "system out of reach", key=key)


def comparison_markdown() -> str:
    """Article 000's comparison table: each dimension's verdict on eager and on static graphs."""
    rows = [[c.dimension, f"**{c.eager_rating}**: {c.eager}",
             f"**{c.static_rating}**: {c.static}"] for c in COMPARISON]  # fmt: skip
    return tables.markdown(["dimension", "eager (dynamic graph)", "static graph"], rows)


def capability_markdown(rows) -> str:
    """One of article 003's comparisons (:data:`DISTRIBUTED`, :data:`MOBILE`) as Markdown."""
    head = ["framework", "what the article names", "what it says", "checked in"]
    return tables.markdown(head, [[display(c.framework), c.api, c.says, c.checked] for c in rows])


def training_markdown() -> str:
    head = ["configuration (as the article names it)", "one A100, samples/s",
            "8x A100, samples/s", "minutes per epoch", "enabled"]  # fmt: skip
    rows = [[r.label, f"{r.one_gpu:g}", f"{r.eight_gpus:g}", f"{r.epoch_min:g}", r.options]
            for r in TRAINING]  # fmt: skip
    return tables.markdown(head, rows, align="lrrrl")


def inference_markdown() -> str:
    head = ["deployment path", *INFERENCE_DEVICES.values(), "route"]
    rows = [[r.label, *_fps(r, INFERENCE_DEVICES).split("/"), r.route] for r in INFERENCE]
    return tables.markdown(head, rows, align="l" + "r" * len(INFERENCE_DEVICES) + "l")


def scenarios_markdown() -> str:
    """The five scenarios: what marks each, what the article recommends and why."""
    head = ["what marks it", "the article recommends", "its reasons", "alternative"]
    rows = [[s.title, s.traits, " or ".join(map(display, s.recommended)), "; ".join(s.reasons),
             f"{display(s.alternative)}, if {s.alternative_when}" if s.alternative else "none"]
            for s in SCENARIOS]  # fmt: skip
    return tables.markdown(head, rows)


def decision_flow_markdown() -> str:
    return "\n".join(f"{i}. **{s.title}**: {s.what}." for i, s in enumerate(DECISION_FLOW, 1))


def out_of_reach_markdown() -> str:
    """Each system the lab cannot run: what it needs, the command that would run it, the claim."""
    head = ["system", "why not here", "what would run it", "what the articles claim"]
    rows = [[e.name, e.needs, f"`{e.command}`", f"{e.claim} ({e.where})"] for e in OUT_OF_REACH]
    return tables.markdown(head, rows)
