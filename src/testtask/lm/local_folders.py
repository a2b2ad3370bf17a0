"""Local folders a runner's settings name (a model to load), checked before anything heavy is imported: a
missing one is one line in a second, not a traceback about Hub repository names after the imports."""

from __future__ import annotations

import os
from collections.abc import Mapping

from testtask.errors import SettingUnusable

DEFAULT_HINT = "give the folder of a saved model, or a Hub id (org/name)"


def check_local_path(key: str, path: str, hint: str = DEFAULT_HINT) -> None:
    """SettingUnusable for `path` (setting `key`) written as a local folder (absolute, ./, ../, ~) that does not
    exist: loaded as a Hub id it would fail with a message about repository names, after minutes of start-up."""
    # a folder path by its form, or a relative path whose first part exists here (a Hub id's owner does not)
    local = path.startswith(("/", "./", "../", "~")) or (
        os.sep in path and os.path.isdir(path.split(os.sep)[0])
    )
    if local and not os.path.isdir(os.path.expanduser(path)):
        raise SettingUnusable(key, path, "no such folder", hint)


def check_local_folders(folders: Mapping[str, tuple[str, str]]) -> None:
    """`check_local_path` for each setting key -> (folder, what to do where it is absent) of `folders`."""
    for key, (path, hint) in folders.items():
        check_local_path(key, path, hint)
