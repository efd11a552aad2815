"""Build the course site (``make book``): every notebook, with its outputs, as a static HTML site.

Each notebook needs an *executed copy* for the profile (``--profile``, default ``smoke``) in
``--executed`` (default ``build/executed/<profile>``), made from the notebook exactly as it is
now (the copy's metadata holds the sha256 of the source file). Two things make such copies:

- ``make test`` (nbval with ``--save-executed``): every notebook nbval ran, so CI executes each
  notebook once and the site reuses that run;
- this script, for the notebooks whose copy is missing or stale, through
  ``benchmarks/notebook_costs.py`` (which also records their time and memory).

``--execute never`` refuses to execute anything (the cheap form ``make test`` uses); ``auto``
(the default) executes what is missing; ``always`` executes everything (a release:
``make book PROFILE=standard``). Then Jupyter Book 2 (MyST) builds the copies without executing
them, with README.md, INSTRUCTORS.md and the notebooks' reference pages (``notebooks/*.md``) as
pages, and ``book/theme`` renders the static HTML, with launch links per notebook page (Binder,
or a JupyterHub via nbgitpuller).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
NOTEBOOKS = ROOT / "notebooks"
DOCS = ["README.md", "INSTRUCTORS.md"]  # pages of the site too: the notebooks link to them


def notebooks() -> list[Path]:
    return sorted(NOTEBOOKS.glob("[0-9][0-9]*_*.ipynb"))  # NN_ and NNx_ (04b)


def stale(executed: Path, profile: str) -> list[Path]:
    """The notebooks whose executed copy is missing, from another profile or from older source."""
    out = []
    for nb in notebooks():
        copy = executed / nb.name
        try:
            meta = json.loads(copy.read_text(encoding="utf-8"))["metadata"].get("labkit", {})
        except (OSError, ValueError, KeyError):
            out.append(nb)
            continue
        digest = hashlib.sha256(nb.read_bytes()).hexdigest()
        if meta.get("profile") != profile or meta.get("source_sha256") != digest:
            out.append(nb)
    return out


def execute(paths: list[Path], profile: str, executed: Path) -> None:
    cmd = [
        sys.executable,
        str(ROOT / "benchmarks" / "notebook_costs.py"),
        "--profile",
        profile,
        "--executed",
        str(executed),
        "--out",
        str(ROOT / "build" / f"notebook-costs-{profile}.json"),
        *map(str, paths),
    ]
    print(f"executing {len(paths)} notebook(s) under {profile}: {', '.join(p.name for p in paths)}")
    if subprocess.run(cmd, check=False).returncode != 0:
        raise SystemExit("error: a notebook failed to execute (see above); the site was not built")


def public_remote() -> str | None:
    """The checkout's ``origin`` as a public https URL, or None (no remote, or a local path)."""
    try:
        url = subprocess.run(
            ["git", "-C", str(ROOT), "remote", "get-url", "origin"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    except OSError:  # no git
        return None
    if url.startswith("git@") and ":" in url:  # git@github.com:owner/repo.git
        host, path = url[len("git@") :].split(":", 1)
        url = f"https://{host}/{path}"
    if not url.startswith("https://"):
        return None
    return url.removesuffix(".git")


def _config(repo: str | None, branch: str | None, hub: str | None, toc: list[str]) -> str:
    import yaml

    config = yaml.safe_load((BOOK / "myst.yml").read_text(encoding="utf-8"))
    config["project"]["toc"] = [{"file": name} for name in toc]
    site = config["site"]
    site["template"] = str(BOOK / site["template"])
    repo = repo or public_remote()
    if not repo:
        print(
            "note: no public repository known, so the pages carry no launch links; fix: "
            "`make book BOOK_REPO=https://github.com/you/graph-lab` (Binder), plus "
            "BOOK_HUB=https://your-hub for a JupyterHub via nbgitpuller"
        )
    site["options"].update(repo=repo or "", hub=hub or site["options"]["hub"])
    if branch:
        site["options"]["branch"] = branch
    return yaml.safe_dump(config, sort_keys=False)


# README.md and INSTRUCTORS.md named in a notebook's text, or linked relatively (../README.md):
# links to their pages in the site (a path outside the book would become a dead link)
MENTION = re.compile(r"(?<![\w/.`\[])(README|INSTRUCTORS)\.md(?![\w`\]])")
LINK = re.compile(r"\]\((?:\.\./)*(README|INSTRUCTORS)\.md(#[^)]*)?\)")


def _link_docs(nb: dict) -> dict:
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            text = "".join(cell["source"])
            text = LINK.sub(lambda m: f"](../{m[1]}.md{m[2] or ''})", text)
            cell["source"] = MENTION.sub(r"[\1.md](../\1.md)", text)
    return nb


def stage(executed: Path, src: Path, repo: str | None, branch: str | None, hub: str | None) -> None:
    """The book's source folder: myst.yml, the index, README and INSTRUCTORS, the executed
    notebooks and their reference pages, laid out as in the repository (notebooks/NN_*.ipynb),
    so launch links open the right file."""
    shutil.rmtree(src, ignore_errors=True)
    (src / "notebooks").mkdir(parents=True)
    shutil.copy(BOOK / "index.md", src / "index.md")
    toc = ["index.md"]
    for nb in notebooks():
        copy = _link_docs(json.loads((executed / nb.name).read_text(encoding="utf-8")))
        (src / "notebooks" / nb.name).write_text(json.dumps(copy, indent=1), encoding="utf-8")
        toc.append(f"notebooks/{nb.name}")
    for page in sorted(NOTEBOOKS.glob("*.md")):  # reference pages the notebooks link to
        shutil.copy(page, src / "notebooks" / page.name)
        toc.append(f"notebooks/{page.name}")
    for doc in DOCS:
        shutil.copy(ROOT / doc, src / doc)
    (src / "myst.yml").write_text(_config(repo, branch, hub, toc + DOCS), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default=os.environ.get("BOOK_PROFILE") or "smoke")
    parser.add_argument("--executed", help="executed copies (default build/executed/PROFILE)")
    parser.add_argument("--out", default=str(ROOT / "build" / "book"), help="site folder parent")
    parser.add_argument("--execute", choices=("auto", "never", "always"), default="auto")
    parser.add_argument("--repo", help="repository URL for the launch links (book/myst.yml)")
    parser.add_argument("--branch", help="branch for the launch links")
    parser.add_argument("--hub", help="a JupyterHub URL: adds an nbgitpuller launch link")
    args = parser.parse_args(argv)
    executed = Path(args.executed or ROOT / "build" / "executed" / args.profile).resolve()
    todo = notebooks() if args.execute == "always" else stale(executed, args.profile)
    if todo and args.execute == "never":
        names = ", ".join(p.name for p in todo)
        print(
            f"error: no up-to-date executed copy under {args.profile} in {executed} of: {names}; "
            "fix: run `make test` (it saves them), or `make book` (it executes what is missing)",
            file=sys.stderr,
        )
        return 2
    if todo:
        execute(todo, args.profile, executed)
    out = Path(args.out).resolve()
    src = out / "src"
    stage(executed, src, args.repo, args.branch, args.hub)
    if shutil.which("node") is None:
        print(
            "error: Jupyter Book 2 runs on Node.js, and no `node` is on the PATH; fix: install "
            "Node.js 20 or later (`apt-get install nodejs`, or `conda install nodejs`)",
            file=sys.stderr,
        )
        return 2
    jb = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(jb) if jb.exists() else "jupyter-book", "build", "--html"]
    env = {**os.environ, "BOOK_PYTHON": sys.executable}  # book/theme/template.yml runs it
    if subprocess.run(cmd, cwd=src, env=env, check=False).returncode != 0:
        print("error: jupyter-book failed (see above)", file=sys.stderr)
        return 1
    html = out / "_build" / "html"
    shutil.rmtree(html, ignore_errors=True)
    html.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(src / "_build" / "html", html)
    missing = [
        nb.name for nb in notebooks() if not (html / "notebooks" / f"{nb.stem}.html").exists()
    ]
    if missing:
        print(f"error: no page for {', '.join(missing)}", file=sys.stderr)
        return 1
    print(f"the course site: {html / 'index.html'} ({len(notebooks())} notebooks, {args.profile})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
