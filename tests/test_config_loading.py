"""Composing the same config files again (as the tests do, hundreds of times per worker) reads each file's current
contents: tests/fixtures/hydra_loads.py keeps loaded files per worker, and an edit or an atomic replacement is seen."""

from __future__ import annotations

import os

from hydra import compose, initialize_config_dir


def test_a_config_file_changed_between_composes_is_read_again(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("a: 1\nb: {c: 2}\n")
    with initialize_config_dir(config_dir=str(tmp_path), version_base=None):
        first = compose(config_name="config")
        first.b.c = 99  # what a caller does to its config stays in it
        assert compose(config_name="config").b.c == 2
        path.write_text("a: 22\nb: {c: 2}\n")  # edited in place, another size
        assert compose(config_name="config").a == 22
        staged = tmp_path / "staged.txt"
        staged.write_text("a: 33\nb: {c: 2}\n")  # the same size, written by rename
        os.replace(staged, path)
        assert compose(config_name="config").a == 33
