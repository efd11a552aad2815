"""The course site (`make book`): a page per notebook with its figures and a launch button, nothing
fetched from the network, and the site as a browser shows it (headless Chromium).

These tests read the built site, ``build/book/_build/html``: ``make test`` builds it from the
notebooks its nbval run executed, then runs them (``-m book``). Without a site they skip (and
fail under CI=true)."""

import functools
import http.server
import json
import re
import subprocess
import sys
import threading
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import NOTEBOOKS, ROOT, skip_or_fail
from test_guide_browser import ARTEFACTS, CHROMIUM, CHROMIUM_ARGS

pytestmark = pytest.mark.book

SITE = ROOT / "build" / "book"
HTML = SITE / "_build" / "html"


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


def _png_outputs(nb: Path) -> int:
    cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
    return sum(
        "image/png" in o.get("data", {})
        for c in cells
        if c["cell_type"] == "code"
        for o in c.get("outputs", [])
    )


def _launch_links(page: Path, nb: Path) -> list[str]:
    return [h for h in _refs(page).links if "urlpath=" in h and f"notebooks/{nb.name}" in h]


def test_every_notebook_has_a_page_with_its_figures(site):
    with_figures = 0
    for nb in NOTEBOOKS:
        page = site / "notebooks" / f"{nb.stem}.html"
        assert page.exists(), f"no page for {nb.name}"
        executed = SITE / "src" / "notebooks" / nb.name
        pngs = _png_outputs(executed)
        refs = _refs(page)
        figures = [s for s in refs.images if "_images/" in s]
        assert len(figures) >= pngs, (
            f"{nb.name}: {pngs} figures executed, {len(figures)} on the page"
        )
        for src in figures:
            assert (page.parent / src).resolve().is_file(), f"{nb.name}: missing {src}"
        with_figures += pngs > 0
    assert with_figures >= 5, "the course's benchmark notebooks draw figures: most pages show some"


def test_launch_buttons_open_each_notebook_from_the_configured_repository(site, tmp_path):
    """With a public repository (BOOK_REPO, or a public origin remote) every page launches its own
    notebook on Binder and, with BOOK_HUB, on a JupyterHub through nbgitpuller; without one the
    pages carry no launch button rather than a made-up address. The repository below is a test
    input, rebuilt from the same executed copies (nothing runs again)."""
    repo, hub = "https://github.com/learner/graph-lab", "https://hub.example.edu"
    build = subprocess.run(
        [
            sys.executable,
            str(ROOT / "book" / "build.py"),
            "--execute",
            "never",
            "--out",
            str(tmp_path),
            "--repo",
            repo,
            "--hub",
            hub,
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert build.returncode == 0, build.stdout[-2000:] + build.stderr[-2000:]
    for nb in NOTEBOOKS:
        links = _launch_links(tmp_path / "_build" / "html" / "notebooks" / f"{nb.stem}.html", nb)
        assert any(h.startswith("https://mybinder.org/v2/gh/learner/graph-lab/") for h in links), nb
        assert any(
            h.startswith(hub) and "nbgitpuller" in h.replace("git-pull", "nbgitpuller")
            for h in links
        ), (nb, links)
    configured = "url: ''" not in (SITE / "src" / "_config.yml").read_text()
    for nb in NOTEBOOKS:  # the site make test built: launch buttons exactly when a repo is known
        assert bool(_launch_links(site / "notebooks" / f"{nb.stem}.html", nb)) == configured, nb


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
            ARTEFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTEFACTS / "book-06.png"))
            print(f"screenshot: {ARTEFACTS / 'book-06.png'}")
        finally:
            browser.close()
    assert not outside, f"the site asked the network for: {outside[:5]}"
