"""What the reviewer notebooks share: building outputs through the CLI and showing them with their sidecars'
numbers. Environment: TESTTASK_NOTEBOOK_FAST=1 (small settings, only `fast_builds`), TESTTASK_NOTEBOOK_FIGURES,
TESTTASK_NOTEBOOK_CACHE and TESTTASK_NOTEBOOK_DATA.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from testtask.data.fetch import FetchError
from testtask.paths import resolve
from testtask.pipeline import NothingBuilt, compose, out_dir, overrides_of, run, typed, variant
from testtask.sidecars import Expected, read


class Walkthrough:
    """One paper's notebook session: `figure(n)` and `table(n)` build through the CLI, display and return numbers."""

    def __init__(
        self, paper: str, fast_builds: dict[str, set[int]], fast_overrides: Sequence[str] = ()
    ) -> None:
        self.paper = paper
        self.fast = os.environ.get("TESTTASK_NOTEBOOK_FAST") == "1"
        self.fast_builds = fast_builds
        self.figures_dir = os.environ.get("TESTTASK_NOTEBOOK_FIGURES", "figures")
        cache = os.environ.get("TESTTASK_NOTEBOOK_CACHE", "cache")
        data = os.environ.get("TESTTASK_NOTEBOOK_DATA")  # None: the config's data.dest (data/published)
        self.overrides = [f"paper={paper}", "source=published", f"cache_dir={cache}"]
        if data:
            self.overrides.append(f"data.dest={data}")
        if self.fast:
            self.overrides += list(fast_overrides)
        self.cfg = self.config()
        self.out = self.out_dir()
        self.data_root = resolve(self.cfg.data.dest) / paper
        print(
            f"FAST={self.fast}\noutputs: {self.out}\ndata:    {self.data_root}\noverrides: {self.overrides}"
        )

    def config(self, *extra: str, figures: str | None = None):
        return compose([*self.overrides, f"figures_dir={figures or self.figures_dir}", *extra])

    def out_dir(self, figures: str | None = None, *extra: str) -> Path:
        """The folder of the outputs built with overrides `extra` (their source and run: paths.output_dir)."""
        cfg = self.config(*extra, figures=figures)
        return out_dir(typed(cfg), self.paper, overrides_of(cfg))

    def fetch(self) -> dict[str, Any] | None:
        """`action=data`: copy or download the authors' release; None (with a note) when it cannot be fetched."""
        try:
            return run(self.config("action=data"))
        except FetchError as err:
            print(
                f"Could not fetch the published data ({err}); figures below use whatever is already present."
            )
            return None

    def build(self, kind: str, number: int, *extra: str, figures: str | None = None) -> bool:
        """Build table or figure `number` through the CLI; False (with a note) when skipped or not built."""
        if self.fast and number not in self.fast_builds[kind]:
            print(f"FAST mode: {kind} {number} skipped (unset TESTTASK_NOTEBOOK_FAST to build it).")
            return False
        try:
            run(self.config(f"action={kind}", f"{kind}={number}", *extra, figures=figures))
        except NothingBuilt as err:
            print(
                f"{kind.capitalize()} {number} was not built: its inputs are not under {self.data_root} ({err})."
            )
            return False
        return True

    def numbers(self, name: str, figures: str | None = None, *extra: str) -> dict | None:
        """The sidecar `name`.json of the outputs built with overrides `extra` (None if absent), checked against them."""
        cfg = self.config(*extra, figures=figures)
        config = typed(cfg)
        path = self.out_dir(figures, *extra) / f"{name}.json"
        built = variant(config, self.paper, overrides_of(cfg))
        expected = Expected.of(
            config.source,
            config.results_run,
            reader="the notebook",
            preset=config.protocol,
            settings=built.fingerprint,
        )
        return read(path, expected) if path.is_file() else None

    def figure(self, number: int, *extra: str, figures: str | None = None) -> dict | None:
        """Build Figure `number`, display its PNG and return its JSON sidecar (None if not built)."""
        from IPython.display import Image, display

        if not self.build("figure", number, *extra, figures=figures):
            return None
        png = self.out_dir(figures, *extra) / f"figure-{number}.png"
        if not png.is_file():
            print(f"Figure {number}: {png} is missing.")
            return None
        display(Image(filename=str(png)))
        return self.numbers(f"figure-{number}", figures, *extra)

    def table(self, number: int, *extra: str, figures: str | None = None) -> dict | None:
        """Build Table `number`, display its Markdown and return its JSON sidecar ({} if it has none; None if not built)."""
        from IPython.display import Markdown, display

        if not self.build("table", number, *extra, figures=figures):
            return None
        display(Markdown((self.out_dir(figures, *extra) / f"table-{number}.md").read_text()))
        return self.numbers(f"table-{number}", figures, *extra) or {}
