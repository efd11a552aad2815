"""Notebook 09 and the standalone guide in a real browser: JupyterLab on a free local port, driven
by Playwright in headless Chromium (Debian's package; Playwright's own browsers are not needed).

One JupyterLab server serves both pages: the notebook at /lab/tree/... and, through Voila's
server extension, the standalone app at /voila/render/app/selection_guide.ipynb (what
``make app`` serves on its own). Screenshots go to ``$LABKIT_ARTEFACTS`` (default: the system
temporary folder) under ``graphlab-browser/``; the test prints their paths.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from conftest import ROOT, free_port, skip_or_fail

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or (
    "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
)
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TOKEN = "graphlab-guide-test"
NOTEBOOK = "notebooks/09_selection_guide.ipynb"
APP = "app/selection_guide.ipynb"
HEADING = ".labkit-guide-recommendation h2"
ARTEFACTS = Path(os.environ.get("LABKIT_ARTEFACTS", tempfile.gettempdir())) / "graphlab-browser"


def _wait_http(url: str, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except urllib.error.HTTPError:
            return  # the server answers
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(f"the server exited with status {proc.returncode}")
            time.sleep(0.5)
    raise TimeoutError(f"no answer from {url} within {timeout:.0f} s")


def _stop(proc: subprocess.Popen) -> None:
    """End the server and everything it started (kernels), by its process group."""
    for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server on a free port, with its own settings, workspaces and runtime dirs."""
    if CHROMIUM is None:
        skip_or_fail("no Chromium here: install Debian's `chromium` package (make browser)")
    home = tmp_path_factory.mktemp("lab")
    # Every cell in the DOM (no windowing), no news prompt over the page, and no autosave: the
    # executed notebook must never be written back over the committed (stripped) one.
    for plugin, settings in {
        "notebook-extension/tracker": {"windowingMode": "none"},
        "apputils-extension/notification": {"fetchNews": "false"},
        "docmanager-extension/plugin": {"autosave": False},
    }.items():
        path = home / "settings" / "@jupyterlab" / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(settings))
    port = free_port()
    env = {
        **os.environ,
        "LABKIT_PROFILE": "smoke",
        "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION": "python",
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_PATH": str(ROOT / "app" / "jupyter"),  # the app's template: no CDN
    }
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        f"--port={port}",
        "--allow-root",
        "--ServerApp.ip=127.0.0.1",
        f"--IdentityProvider.token={TOKEN}",
        f"--ServerApp.root_dir={ROOT}",
        "--ServerApp.port_retries=0",
        f"--LabApp.user_settings_dir={home / 'settings'}",
        f"--LabApp.workspaces_dir={home / 'workspaces'}",
        "--VoilaConfiguration.template=graphlab",
    ]
    with open(home / "server.log", "wb") as log:
        proc = subprocess.Popen(
            cmd,
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            _wait_http(f"http://127.0.0.1:{port}/api/status?token={TOKEN}", proc, timeout=120)
            yield f"http://127.0.0.1:{port}"
        except Exception:
            log.flush()
            print((home / "server.log").read_text(errors="replace")[-3000:])
            raise
        finally:
            _stop(proc)


@pytest.fixture
def page(request, tmp_path):
    """A page in a fresh headless Chromium; on a failure its screenshot is saved and printed."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"),
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 1100},
        )
        failed_before = request.session.testsfailed
        try:
            pg = context.new_page()
            yield pg
            if request.session.testsfailed > failed_before:
                _screenshot(pg, f"{request.node.name}-failure.png")
        finally:
            context.close()


def _heading_contains(page, text: str, timeout_ms: float) -> None:
    page.wait_for_function(
        "([sel, text]) => [...document.querySelectorAll(sel)].some(h => h.innerText.includes(text))",
        arg=[HEADING, text],
        timeout=timeout_ms,
    )


def _select(page, label: str):
    return page.locator(".widget-dropdown", has=page.locator("label", has_text=label)).locator(
        "select"
    )


def _scenario_select(page):
    return _select(page, "Scenario")


def _view_contains(page, text: str, timeout_ms: float) -> None:
    page.wait_for_function(
        "([sel, text]) => [...document.querySelectorAll(sel)].some(e => e.innerText.includes(text))",
        arg=[".labkit-guide-recommendation", text],
        timeout=timeout_ms,
    )


def _screenshot(page, name: str) -> Path:
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTEFACTS / name
    page.screenshot(path=str(path))
    print(f"screenshot: {path}")
    return path


def test_notebook_09_runs_in_jupyterlab_and_the_recommendation_follows_the_scenario(lab, page):
    from labkit import guide

    page.set_default_timeout(60_000)
    page.goto(f"{lab}/lab/tree/{NOTEBOOK}?token={TOKEN}")
    page.locator(".jp-Notebook .jp-Cell").first.wait_for()
    page.locator(".jp-StatusBar-TextItem", has_text="| Idle").first.wait_for(timeout=90_000)
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()

    # The last cell lists the course's sources with their dates (an earlier one prints some too):
    # the notebook has run once they are in the last cell's output.
    page.locator(".jp-CodeCell").last.locator(
        ".jp-OutputArea-output", has_text="date of the commit the link points to"
    ).first.wait_for(timeout=120_000)
    prompts = page.locator(".jp-CodeCell .jp-InputArea-prompt").all_inner_texts()
    assert prompts and all(p.strip() not in ("[ ]:", "[*]:", "") for p in prompts), prompts
    errors = ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"
    assert page.locator(errors, has_text="Error").count() == 0
    # A cell set the answers to a MindSpore team deploying to the browser: TensorFlow leads.
    _heading_contains(page, f"Recommended: {guide.DISPLAY['tensorflow']}", 30_000)
    select = _scenario_select(page).first
    select.scroll_into_view_if_needed()
    select.select_option(label=guide.SCENARIOS["special_hardware"])
    _heading_contains(page, f"Recommended: {guide.DISPLAY['mindspore']}", 30_000)

    # the deployment scenario on its own is a tie today, and the page says so
    def step(title):  # the form's steps are an accordion: open one to reach its answers
        page.get_by_text(title).first.click()

    step("Step 2: Weigh the team's expertise")
    _select(page, "Team knows").first.select_option(label="(not given)")
    step("Step 4: Think about long-term growth")
    page.locator(".widget-checkbox", has_text="browser").locator("input").first.uncheck()
    step("Step 1: Name the core need")
    select.select_option(label=guide.SCENARIOS["deployment"])
    _heading_contains(page, "Recommended: a tie: PyTorch, TensorFlow and MindSpore", 30_000)
    view = page.locator(".labkit-guide-recommendation").first
    shown = view.inner_text().lower()
    assert guide.VOICES[guide.ARTICLE] in shown and guide.VOICES[guide.COURSE] in shown
    step("Step 4: Think about long-term growth")
    _select(page, "Hardware").first.select_option(label="Google TPU")
    step("Step 1: Name the core need")
    select.select_option(label=guide.SCENARIOS["large_scale_training"])
    _heading_contains(page, "Recommended: JAX", 30_000)
    text = view.inner_text()
    assert "The two voices differ" in text and "Where the voices differ" in text
    assert guide.SOURCES["jax"].date in text  # a dated source, printed
    select.evaluate("e => e.scrollIntoView({block: 'start'})")  # the form and its advice in view
    page.mouse.wheel(0, -120)
    shot = _screenshot(page, "notebook09-jupyterlab.png")
    assert shot.stat().st_size > 10_000


def test_the_standalone_app_recommends_exports_and_asks_no_cdn(lab, page):
    from labkit import guide

    outside = []
    page.on(
        "request",
        lambda r: (
            outside.append(r.url)
            if "127.0.0.1" not in r.url and not r.url.startswith(("data:", "blob:"))
            else None
        ),
    )
    page.set_default_timeout(60_000)
    page.goto(f"{lab}/voila/render/{APP}?token={TOKEN}")
    _heading_contains(page, f"Recommended: {guide.DISPLAY['torch']}", 90_000)  # research
    _scenario_select(page).first.select_option(label=guide.SCENARIOS["special_hardware"])
    _heading_contains(page, f"Recommended: {guide.DISPLAY['mindspore']}", 30_000)
    _view_contains(
        page, f"What the article recommends (2023): {guide.DISPLAY['mindspore']}", 30_000
    )

    page.get_by_role("button", name="Export as Markdown").click()
    link = page.locator("a[download='framework_choice.md']")
    link.wait_for()
    with page.expect_download() as download:
        link.click()
    text = Path(download.value.path()).read_text()
    assert text.startswith("# Framework choice") and "Recommended: MindSpore" in text
    _screenshot(page, "selection-guide-app.png")
    assert outside == [], f"the app asked third parties for {outside}"
