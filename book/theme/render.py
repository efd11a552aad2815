"""Render the pages MyST built (its AST, served on CONTENT_CDN) as static HTML in BUILD_DIRECTORY.

Each page is written where its source lies in the staged book (``notebooks/NN_x.html``,
``README.html``, ``index.html``), so the site mirrors the repository. A notebook page shows its
stored outputs (streams, errors, images, HTML, text) and, when a repository is configured, launch
links at its top: Binder, and a JupyterHub through nbgitpuller. Nothing on a page loads from the
network: images are copied next to the pages and the only stylesheet is ``style.css``.
"""

from __future__ import annotations

import html
import json
import os
import posixpath
import re
import shutil
import urllib.request
from pathlib import Path
from urllib.parse import quote, urlencode

CDN = os.environ["CONTENT_CDN"].rstrip("/")
OUT = Path(os.environ["BUILD_DIRECTORY"])
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
MIME_ORDER = (
    "image/png",
    "image/jpeg",
    "image/svg+xml",
    "text/html",
    "text/markdown",
    "text/plain",
)


def fetch(path: str) -> bytes:
    with urllib.request.urlopen(CDN + path) as response:
        return response.read()


def launch_links(options: dict, location: str) -> list[tuple[str, str]]:
    """Binder and nbgitpuller URLs that open the notebook at ``location`` (``/notebooks/x.ipynb``)."""
    repo, branch, hub = options.get("repo"), options.get("branch") or "main", options.get("hub")
    if not repo or not location.endswith(".ipynb"):
        return []
    path = location.lstrip("/")
    if repo.startswith("https://github.com/"):
        binder = f"https://mybinder.org/v2/gh/{repo.removeprefix('https://github.com/')}/{branch}"
    else:
        binder = f"https://mybinder.org/v2/git/{quote(repo + '.git', safe='')}/{branch}"
    links = [("Launch on Binder", f"{binder}?{urlencode({'urlpath': f'lab/tree/{path}'})}")]
    if hub:
        folder = repo.rstrip("/").rsplit("/", 1)[-1]
        query = urlencode({"repo": repo, "branch": branch, "urlpath": f"lab/tree/{folder}/{path}"})
        links.append(
            ("Launch on JupyterHub", f"{hub.rstrip('/')}/hub/user-redirect/git-pull?{query}")
        )
    return links


class Page:
    """One page's HTML: ``paths`` maps every page's slug to its file in the site."""

    def __init__(self, path: str, paths: dict[str, str], options: dict):
        self.path, self.paths, self.options = path, paths, options

    def rel(self, target: str) -> str:
        return posixpath.relpath(target, posixpath.dirname(self.path) or ".")

    def asset(self, url: str) -> str:
        name = "_static/" + url.rsplit("/", 1)[-1]
        if not (OUT / name).exists():
            (OUT / name).parent.mkdir(parents=True, exist_ok=True)
            (OUT / name).write_bytes(fetch(url))
        return self.rel(name)

    def children(self, node: dict) -> str:
        return "".join(self.node(c) for c in node.get("children", []))

    def link(self, node: dict) -> str:
        url = node.get("url", "")
        if node["type"] == "crossReference":  # a heading or figure, on this page or another
            url = f"{url}#{node.get('html_id', '')}"
        path, _, anchor = url.partition("#")
        if path.startswith("/") and path[1:] in self.paths:  # another page of the site
            url = self.rel(self.paths[path[1:]]) + (f"#{anchor}" if anchor else "")
        elif path and not re.match(r"^[a-z]+:", path):  # a repository file that is no page
            repo = self.options.get("repo")
            if not repo:
                return self.children(node)
            source = posixpath.normpath(posixpath.join(posixpath.dirname(self.path), path))
            url = f"{repo}/blob/{self.options.get('branch') or 'main'}/{source}"
        return f'<a href="{html.escape(url)}">{self.children(node)}</a>'

    def output(self, data: dict) -> str:
        kind = data.get("output_type")
        if kind == "stream":
            return f'<pre class="stream">{html.escape(ANSI.sub("", data.get("text", "")))}</pre>'
        if kind == "error":
            trace = ANSI.sub("", "\n".join(data.get("traceback", [])))
            return f'<pre class="error">{html.escape(trace)}</pre>'
        bundle = data.get("data", {})
        for mime in MIME_ORDER:
            item = bundle.get(mime)
            if not item:
                continue
            if mime.startswith("image/"):
                return f'<img src="{self.asset(item["path"])}" alt="output">'
            if mime == "text/html":
                return f'<div class="html">{item["content"]}</div>'
            return f"<pre>{html.escape(ANSI.sub('', item['content']))}</pre>"
        return ""

    def node(self, node: dict) -> str:
        kind, inner = node["type"], ""
        if "children" in node:
            inner = self.children(node)
        value = html.escape(node.get("value", ""))
        simple = {
            "paragraph": "p",
            "strong": "strong",
            "emphasis": "em",
            "blockquote": "blockquote",
            "listItem": "li",
            "tableRow": "tr",
            "superscript": "sup",
            "subscript": "sub",
            "delete": "del",
            "caption": "figcaption",
            "container": "figure",
        }
        if kind in simple:
            return f"<{simple[kind]}>{inner}</{simple[kind]}>"
        if kind == "text":
            return value
        if kind in ("inlineCode", "inlineMath"):
            return f"<code>{value}</code>"
        if kind in ("code", "math"):
            return f'<pre class="{"source" if node.get("executable") else "code"}">{value}</pre>'
        if kind == "heading":
            ident = html.escape(node.get("html_id", ""))
            return f'<h{node["depth"]} id="{ident}">{inner}</h{node["depth"]}>'
        if kind == "list":
            tag = "ol" if node.get("ordered") else "ul"
            return f"<{tag}>{inner}</{tag}>"
        if kind == "table":
            return f"<table>{inner}</table>"
        if kind == "tableCell":
            tag = "th" if node.get("header") else "td"
            return f"<{tag}>{inner}</{tag}>"
        if kind in ("link", "crossReference"):
            return self.link(node)
        if kind == "cite":  # a DOI link whose citation MyST could fetch
            label = html.escape(node.get("label", ""))
            return f'<a href="https://doi.org/{label}">{inner or label}</a>'
        if kind == "image":
            return f'<img src="{self.asset(node["url"])}" alt="{html.escape(node.get("alt", ""))}">'
        if kind == "html":
            return node.get("value", "")
        if kind == "break":
            return "<br>"
        if kind == "thematicBreak":
            return "<hr>"
        if kind in ("admonition", "aside"):
            return f'<aside class="note">{inner}</aside>'
        if kind == "admonitionTitle":
            return f"<strong>{inner}</strong>"
        if kind == "outputs":
            return f'<div class="cell_output">{inner}</div>'
        if kind == "output":
            return self.output(node.get("jupyter_data") or {})
        if kind in ("comment", "mystTarget", "footnoteDefinition"):
            return ""
        if kind == "block":
            return f'<section class="cell">{inner}</section>'
        return inner  # root and anything else: its content


def render(page: dict, path: str, paths: dict[str, str], titles: dict[str, str], options: dict):
    p = Page(path, paths, options)
    nav = "".join(
        f'<li><a href="{p.rel(paths[slug])}">{html.escape(title)}</a></li>'
        for slug, title in titles.items()
    )
    launch = "".join(
        f'<a class="launch" href="{html.escape(url)}">{label}</a>'
        for label, url in launch_links(options, page["location"])
    )
    if page["location"].endswith(".ipynb"):
        export = page["frontmatter"]["exports"][0]
        launch += f'<a class="launch" href="{p.asset(export["url"])}" download>Download .ipynb</a>'
    title = page["frontmatter"].get("title", "")
    heading = "" if page["frontmatter"].get("content_includes_title") else f"<h1>{title}</h1>"
    body = p.node(page["mdast"])
    text = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)} · {html.escape(options["site_title"])}</title>
<link rel="stylesheet" href="{p.rel("_static/style.css")}"></head>
<body><nav><ul>{nav}</ul></nav>
<main><div class="launch-bar">{launch}</div>{heading}{body}</main></body></html>
"""
    (OUT / path).parent.mkdir(parents=True, exist_ok=True)
    (OUT / path).write_text(text, encoding="utf-8")


def main() -> None:
    config = json.loads(fetch("/config.json"))
    project = config["projects"][0]
    options = config.get("options", {})
    slugs = [project["index"]] + [page["slug"] for page in project["pages"]]
    pages = {slug: json.loads(fetch(f"/content/{slug}.json")) for slug in slugs}
    paths = {
        slug: str(Path(page["location"].lstrip("/")).with_suffix(".html"))
        for slug, page in pages.items()
    }
    titles = {slug: page["frontmatter"].get("title", slug) for slug, page in pages.items()}
    options["site_title"] = project.get("title", "")
    (OUT / "_static").mkdir(parents=True, exist_ok=True)
    shutil.copy(Path(__file__).with_name("style.css"), OUT / "_static" / "style.css")
    for slug, page in pages.items():
        render(page, paths[slug], paths, titles, options)
    print(f"rendered {len(pages)} pages into {OUT}")


if __name__ == "__main__":
    main()
