"""A learner's result card: one small, anonymous JSON file to hand in (the machine, versions,
profile, every record and the graph/eager ratios), every string scrubbed of host and user
names, home folders, e-mail addresses and paths (:class:`Scrubber`)."""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import re
import socket
import uuid
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from ..util import data_file, jsonio
from .compare import flags, ok, speedups

KIND = "labkit-result-card"
FORMAT = 1

__all__ = ["FORMAT", "KIND", "Scrubber", "build", "ratios", "save", "summary"]

#: what the scrubber knows, as labkit/data/cards.toml lists it: the environment variables that
#: name the user, the fields whose values are words the lab chose (left alone), the patterns of
#: e-mail addresses, home folders and paths
_DATA = data_file("cards")


def _identity() -> tuple[set[str], set[str]]:
    users = {os.environ.get(v, "") for v in _DATA["user_variables"]}
    with contextlib.suppress(ImportError, KeyError):  # the account, as getpass.getuser finds it
        import pwd

        users.add(pwd.getpwuid(os.getuid()).pw_name)
    users.add(Path.home().name)
    hosts = {socket.gethostname(), socket.gethostname().split(".")[0]}
    clean = lambda names: {n for n in names if n and n.strip() and n not in ("/", ".")}
    return clean(users), clean(hosts)


_EMAIL, _HOME, _PATH, _SITE = (
    re.compile(_DATA["patterns"][k], re.VERBOSE) for k in ("email", "home", "path", "site")
)


def _short_path(match: re.Match) -> str:
    path = match.group(0)
    site = list(_SITE.finditer(path))
    if site:
        return ".../" + path[site[-1].start() :].replace("\\", "/")
    last = re.split(r"[/\\]", path.rstrip("/\\"))[-1]
    return f"<path>/{last}" if last else "<path>"


class Scrubber:
    """Removes host and user names (this machine's, or those given, and any in a home folder),
    e-mail addresses and paths from every string of a JSON-like value."""

    def __init__(self, users: Iterable[str] | None = None, hosts: Iterable[str] | None = None):
        users = _identity()[0] if users is None else users
        hosts = _identity()[1] if hosts is None else hosts
        named = [(n, "<host>") for n in hosts] + [(n, "<user>") for n in users]
        self.rules = [(_EMAIL, "<email>"), (_HOME, "~"), (_PATH, _short_path)]
        self.rules += [  # the longest name first: a name inside another is not cut out of it
            (re.compile(rf"(?<![A-Za-z0-9]){re.escape(n)}(?![A-Za-z0-9])", re.IGNORECASE), tag)
            for n, tag in sorted(named, key=lambda rule: -len(rule[0]))
        ]

    def __call__(self, value):
        if isinstance(value, str):
            for pattern, tag in self.rules:
                value = pattern.sub(tag, value)
            return value
        if isinstance(value, dict):
            return {self(k): v if k in _DATA["structural"] else self(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self(v) for v in value]
        return value


def ratios(records: Iterable[dict]) -> list[dict]:
    """:func:`labkit.results.speedups` of every pair, each row ``flagged`` when it has flags."""
    return [{**r, "flagged": bool(r["flags"])} for r in speedups(records, include_invalid=True)]


def build(
    records: Iterable[dict],
    name: str | None = None,
    source: str = "",
    scrubber: Scrubber | None = None,
    local: bool = True,
) -> dict:
    """The card of ``records`` (``ValueError`` when there are none); ``local``: measured here,
    so this machine's fingerprint stands in where records carry none."""
    records = [dict(r) for r in records]
    if not records:
        raise ValueError(
            "no benchmark records to put on a card; fix: run notebook 06 or "
            "`python -m labkit bench --profile smoke` first"
        )
    from .. import __version__, hardware

    seen = Counter(json.dumps(r.get("machine") or {}, sort_keys=True) for r in records)
    machine = json.loads(seen.most_common(1)[0][0])  # the records' commonest fingerprint
    machine = machine or (hardware.fingerprint() if local else {})  # none: this one's, if local
    versions = {k: v for r in records for k, v in (r.get("versions") or {}).items() if v}
    profiles_seen = Counter(r.get("profile") for r in records)
    scrub = scrubber or Scrubber()
    card = scrub(
        {
            "kind": KIND,
            "format": FORMAT,
            "card_id": uuid.uuid4().hex,
            "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "labkit": __version__,
            "source": Path(source).name if source else "",
            "profile": profiles_seen.most_common(1)[0][0],
            "profiles": sorted(p for p in profiles_seen if p),
            "machine": machine,
            "versions": dict(sorted(versions.items())),  # the last record's of each package
            "counts": {
                "records": len(records),
                "measured": len(ok(records)),
                "flagged": sum(bool(flags(r)) for r in ok(records)),
            },
            "ratios": ratios(records),
            "records": records,
        }
    )
    return card | {"name": name or None}  # the one thing a learner chooses to show: not scrubbed


def save(card: dict, out: str | os.PathLike) -> Path:
    """Write ``card`` to ``out`` in one step; returns the path."""
    return jsonio.write_atomic(out, json.dumps(card, indent=1, allow_nan=False) + "\n")


def summary(card: dict) -> str:
    """A few lines that say what a card holds (for the command line and notebooks)."""
    m, c = card["machine"], card["counts"]
    lines = [
        f"card {card['card_id'][:8]}: {c['records']} records ({c['measured']} measured, "
        f"{c['flagged']} flagged), profile {card['profile']}, "
        f"{m.get('cpu', '?')} with {m.get('cores', '?')} cores"
        + (f", name {card['name']!r}" if card.get("name") else ", anonymous"),
    ]
    for r in card["ratios"]:
        note = "  [flagged]" if r["flagged"] else ""
        lines.append(
            f"  {r['framework']} {r['mode']} / {r['baseline']}, {r['task']} {r['precision']}: "
            f"{r['speedup']:.2f}x{note}"
        )
    return "\n".join(lines)
