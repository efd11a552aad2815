"""The course site (`make book`, Jupyter Book 2): a page per notebook with its outputs and launch
links, README and INSTRUCTORS as pages the notebooks link to, every link inside the site
reaching a file, nothing fetched from the network, and the site as a browser shows it (headless
Chromium).

These tests read the built site, ``build/book/_build/html``: ``make test`` builds it from the
notebooks its nbval run executed, then runs them (``-m book``). Without a site they skip (and
fail under CI=true)."""

import functools
import html
import http.server
import json
import re
import subprocess
import sys
import threading
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from conftest import NOTEBOOKS, ROOT, skip_or_fail
from test_guide_browser import ARTEFACTS, CHROMIUM, CHROMIUM_ARGS

pytestmark = pytest.mark.book

SITE = ROOT / "build" / "book"
HTML = SITE / "_build" / "html"
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


@pytest.fixture(scope="module")
def site() -> Path:
    if not (HTML / "index.html").exists():
        skip_or_fail(f"no course site in {HTML}: run `make book` (or `make test`)")
    return HTML


class _Refs(HTMLParser):
    """Every resource a page loads (scripts, stylesheets, images, fonts) and every link."""

    def __init__(self):
        super().__init__()
        self.loads: list[str] = []
        self.links: list[str] = []
        self.images: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script" and a.get("src"):
            self.loads.append(a["src"])
        elif tag == "link" and a.get("href") and a.get("rel") not in ("canonical", "next", "prev"):
            if a.get("rel") in ("stylesheet", "preload", "icon", "shortcut icon", "modulepreload"):
                self.loads.append(a["href"])
        elif tag == "img" and a.get("src"):
            self.loads.append(a["src"])
            self.images.append(a["src"])
        elif tag == "a" and a.get("href"):
            self.links.append(a["href"])


def _refs(page: Path) -> _Refs:
    p = _Refs()
    p.feed(page.read_text(encoding="utf-8"))
    return p


def _outputs(nb: Path) -> list[dict]:
    cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
    return [o for c in cells if c["cell_type"] == "code" for o in c.get("outputs", [])]


def _stream_lines(nb: Path) -> list[str]:
    """The lines the notebook's run printed (stdout, stderr), as the page should show them."""
    text = "".join(
        "".join(o["text"]) if isinstance(o["text"], list) else o["text"]
        for o in _outputs(nb)
        if o["output_type"] == "stream"
    )
    return [line for line in (ANSI.sub("", t).strip() for t in text.splitlines()) if line]


def _page(site: Path, nb: Path) -> Path:
    return site / "notebooks" / f"{nb.stem}.html"


def _launch_links(page: Path) -> list[str]:
    return [h for h in _refs(page).links if "urlpath=" in h]


def test_every_notebook_has_a_page_with_its_outputs(site):
    with_figures = 0
    for nb in NOTEBOOKS:
        page = _page(site, nb)
        assert page.exists(), f"no page for {nb.name}"
        executed = SITE / "src" / "notebooks" / nb.name
        pngs = sum("image/png" in o.get("data", {}) for o in _outputs(executed))
        figures = [s for s in _refs(page).images if s.startswith("../_static/")]
        assert len(figures) >= pngs, f"{nb.name}: {pngs} figures executed, {len(figures)} shown"
        for src in figures:
            assert (page.parent / src).resolve().is_file(), f"{nb.name}: missing {src}"
        text = page.read_text(encoding="utf-8")
        for line in _stream_lines(executed)[:30]:
            assert html.escape(line) in text, f"{nb.name}: the page lacks the output {line!r}"
        with_figures += pngs > 0
    assert with_figures >= 5, "the course's benchmark notebooks draw figures: most pages show some"


def test_launch_links_open_each_notebook_from_the_configured_repository(site, tmp_path):
    """With a public repository (BOOK_REPO, or a public origin remote) every notebook page
    launches its own notebook on Binder and, with BOOK_HUB, on a JupyterHub through nbgitpuller;
    without one the pages carry no launch link rather than a made-up address. The repository
    below is a test input, rebuilt from the site's own executed copies (nothing runs again)."""
    repo, hub, branch = "https://github.com/learner/graph-lab", "https://hub.example.edu", "spring"
    args = ["--execute", "never", "--executed", str(SITE / "src" / "notebooks")]
    args += ["--out", str(tmp_path), "--repo", repo, "--hub", hub]
    build = subprocess.run(
        [sys.executable, str(ROOT / "book" / "build.py"), *args, "--branch", branch],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert build.returncode == 0, build.stdout[-2000:] + build.stderr[-2000:]
    for nb in NOTEBOOKS:
        links = _launch_links(_page(tmp_path / "_build" / "html", nb))
        assert len(links) == 2, (nb.name, links)
        binder, puller = (urlsplit(h) for h in sorted(links, key=lambda h: "mybinder" not in h))
        assert binder.netloc + binder.path == f"mybinder.org/v2/gh/learner/graph-lab/{branch}"
        assert parse_qs(binder.query) == {"urlpath": [f"lab/tree/notebooks/{nb.name}"]}, links
        assert f"https://{puller.netloc}{puller.path}" == f"{hub}/hub/user-redirect/git-pull"
        assert parse_qs(puller.query) == {
            "repo": [repo],
            "branch": [branch],
            "urlpath": [f"lab/tree/graph-lab/notebooks/{nb.name}"],
        }, links
    configured = "repo: ''" not in (SITE / "src" / "myst.yml").read_text()
    for nb in NOTEBOOKS:  # the site make test built: launch links exactly when a repo is known
        assert bool(_launch_links(_page(site, nb))) == configured, nb


def test_readme_and_instructors_are_pages_the_notebooks_link_to(site):
    for doc in ("README", "INSTRUCTORS"):
        assert (site / f"{doc}.html").is_file(), f"{doc}.md is no page of the site"
        for nb in NOTEBOOKS:  # named in a notebook's text, or linked (../README.md): a page link
            if re.search(rf"(?<![\w/.`\[]){doc}\.md(?![\w`\]])", nb.read_text(encoding="utf-8")):
                assert f"../{doc}.html" in _refs(_page(site, nb)).links, (nb.name, doc)
    welcome = set(_refs(_page(site, NOTEBOOKS[0])).links)
    assert {"../README.html", "../INSTRUCTORS.html"} <= welcome


def test_the_side_by_side_reference_is_a_page_the_notebooks_link_to(site):
    page = site / "notebooks" / "side_by_side.html"
    assert page.is_file(), "notebooks/side_by_side.md is no page of the site"
    for nb in NOTEBOOKS:
        if "](side_by_side.md)" in nb.read_text(encoding="utf-8"):
            assert "side_by_side.html" in _refs(_page(site, nb)).links, nb.name
    assert {"02_tensorflow_graphs.html", "04_mindspore_and_paddle.html"} <= set(_refs(page).links)


def test_every_link_inside_the_site_reaches_a_file_and_its_anchor(site):
    ids: dict[Path, set[str]] = {}
    broken = []
    for page in sorted(site.rglob("*.html")):
        refs = _refs(page)
        for ref in refs.links + refs.loads:
            if re.match(r"^([a-z][a-z0-9+.-]*:|//)", ref, re.IGNORECASE):
                if re.match(r"^https?://(README|INSTRUCTORS)\.md", ref):
                    broken.append(f"{page.relative_to(site)}: {ref}")
                continue
            path, _, anchor = ref.partition("#")
            target = (page.parent / path).resolve() if path else page
            if not target.is_file():
                broken.append(f"{page.relative_to(site)}: {ref}")
            elif anchor and target.suffix == ".html":
                if target not in ids:
                    ids[target] = set(re.findall(r'\sid="([^"]+)"', target.read_text("utf-8")))
                if anchor not in ids[target]:
                    broken.append(f"{page.relative_to(site)}: {ref} (no such anchor)")
    assert not broken, broken[:10]


def test_the_site_loads_nothing_from_the_network(site):
    remote = re.compile(r"^(?:https?:)?//", re.IGNORECASE)
    found = []
    for page in site.rglob("*.html"):
        found += [f"{page.relative_to(site)}: {u}" for u in _refs(page).loads if remote.match(u)]
    for css in site.rglob("*.css"):
        found += [
            f"{css.relative_to(site)}: {u}"
            for u in re.findall(
                r"url\(\s*['\"]?((?:https?:)?//[^'\")]+)", css.read_text(errors="replace")
            )
        ]
    assert not found, found[:10]


@pytest.fixture(scope="module")
def served(site):
    """The site on a local port, as a static web server would serve it."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.browser
def test_the_site_renders_in_headless_chromium(served, tmp_path):
    if CHROMIUM is None:
        skip_or_fail("no Chromium here: install Debian's `chromium` package (make browser)")
    from playwright.sync_api import sync_playwright

    outside: list[str] = []

    def only_local(route):
        url = route.request.url
        if url.startswith((served, "data:")):
            route.continue_()
        else:
            outside.append(url)
            route.abort()

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 1000})
            page.route("**/*", only_local)
            page.goto(f"{served}/index.html")
            assert "Graph Lab" in page.title()
            nav = page.locator("nav a", has_text="06")
            assert nav.count() >= 1, "the navigation lists the notebooks"
            page.goto(f"{served}/notebooks/06_resnet50_training_benchmark.html")
            figure = page.locator(".cell_output img").first
            figure.wait_for(timeout=30_000)
            figure.scroll_into_view_if_needed()
            width = figure.evaluate("img => img.complete ? img.naturalWidth : 0")
            assert width > 100, "the figure did not render"
            page.locator("a", has_text="Download .ipynb").wait_for(timeout=10_000)
            ARTEFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTEFACTS / "book-06.png"))
            print(f"screenshot: {ARTEFACTS / 'book-06.png'}")
            page.goto(f"{served}/notebooks/{NOTEBOOKS[0].stem}.html")
            page.locator('main a[href="../README.html"]').first.click()
            page.wait_for_url("**/README.html")
            assert page.locator("main h1").first.is_visible(), "README.md opens as a page"
        finally:
            browser.close()
    assert not outside, f"the site asked the network for: {outside[:5]}"
