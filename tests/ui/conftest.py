"""``omxfs ui`` as a real server process, and one headless chromium (Debian's, driven by Playwright) per module; a
module with a ``team`` workspace fixture gets its ``server`` and a ``page`` of it, one each."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from omxfs.store import Workspace
from tests.fuse.conftest import clean_env, mount  # noqa: F401  (the mount fixture)

CHROMIUM = "/usr/bin/chromium"
VIEWPORT = {"width": 1100, "height": 640}
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
REPO = Path(__file__).resolve().parents[2]
#: where the browser tests put each page's screenshot: docs/img (the README's) when OMX_UI_SCREENSHOTS=1, else a
#: directory of the machine's temporary one, so that a test run leaves the checkout as it was
SCREENSHOTS = (
    REPO / "docs" / "img"
    if os.environ.get("OMX_UI_SCREENSHOTS") == "1"
    else Path(tempfile.gettempdir()) / f"omx-ui-screenshots-{os.getuid()}"
)


@dataclass
class Server:
    process: subprocess.Popen[str]
    url: str  # as printed: with the token
    port: int

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def token(self) -> str:
        return self.url.rpartition("token=")[2]

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        for pipe in (self.process.stdout, self.process.stderr):
            if pipe is not None:
                pipe.close()


def start_ui(workspace: Path, *options: str, prefix: Sequence[str] = (), cwd: Path = REPO) -> Server:
    """``omxfs ui WORKSPACE --port 0 OPTIONS`` of this checkout, run in ``cwd``, returned once it printed its URL (it
    listens before printing); run by the command ``prefix`` when one is given."""
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    process = subprocess.Popen(
        [*prefix, sys.executable, "-m", "cli.omxfs", "ui", str(workspace), "--port", "0", *options],
        cwd=cwd,
        env={**clean_env(), "PYTHONPATH": path},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("open http://"):
            url = line.split()[1]
            return Server(process, url, int(url.split(":")[2].split("/")[0]))
    process.wait(10)
    assert process.stderr is not None
    with process.stdout, process.stderr:
        raise AssertionError(f"omxfs ui exited {process.returncode}: {process.stderr.read()}")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e .[dev])")
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"{CHROMIUM} is absent (scripts/install.sh --dev installs Debian's chromium)")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="module")
def server(team: Workspace) -> Iterator[Server]:
    """``omxfs ui TEAM --as boss``, one per module: ``team`` is the module's own workspace fixture."""
    started = start_ui(team.root, "--as", "boss")
    yield started
    started.stop()


@pytest.fixture(scope="module")
def page(browser: Any, server: Server) -> Iterator[Any]:
    """One tab of the module's browser, opened at the server's URL (with its token); ``page.dialogs`` lists every
    alert, confirm or prompt a page raised (each dismissed, as Playwright does without a listener)."""
    context = browser.new_context(viewport=VIEWPORT)
    opened = context.new_page()
    opened.dialogs = []
    opened.on("dialog", lambda dialog: (opened.dialogs.append(dialog.message), dialog.dismiss()))
    opened.goto(server.url)
    yield opened
    context.close()
