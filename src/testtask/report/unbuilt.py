"""What the report says first when outputs its claims read are not built: the commands that build them.

`make report` builds nothing by default: the full-setting figures take long (the posterior fits), and a report
that silently spent that time would not be "the report of what is built".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from testtask.paths import AUTHORS
from testtask.report.evaluate import Verdict

# Overrides that decide where outputs are built and read: a command that builds the missing ones repeats them.
PLACE_KEYS = ("figures_dir", "cache_dir", "results_dir", "results_run", "data.dest")


@dataclass(frozen=True)
class Unbuilt:
    paper: str
    source: str
    files: tuple[str, ...]  # the sidecars not built
    claims: int  # how many claims wait for them
    preset: str = AUTHORS  # the protocol preset they are missing under (testtask.settings.Protocol)
    own_commands: tuple[str, ...] = ()  # outputs built by a command of their own (a sensitivity variant)
    # what the build command adds (own_files=false: the paper's settings alone)
    overrides: tuple[str, ...] = ()


def collect(
    paper: str, source: str, verdicts: Sequence[Verdict], preset: str = AUTHORS, overrides: Sequence[str] = ()
) -> Unbuilt | None:
    """The outputs of `paper` its claims read that are not built under `preset` (None when all are); a
    release-gap claim waits for nothing a build could make."""
    waiting = [
        v for v in verdicts if v.unbuilt and not (v.claim.category and v.claim.category.kind == "release-gap")
    ]
    if not waiting:
        return None
    # a sidecar of the paper's own folder is a bare file name; one elsewhere (variants/<name>/...) has its command
    files = tuple(sorted({f for v in waiting for f in v.unbuilt if "/" not in f}))
    own = tuple(sorted({v.command for v in waiting if v.command and any("/" in f for f in v.unbuilt)}))
    return Unbuilt(paper, source, files, len(waiting), preset, own, tuple(overrides))


def place_overrides(overrides: Sequence[str]) -> list[str]:
    """The command-line overrides (key=value) among `overrides` that say where outputs are built and read."""
    return [o for o in overrides if o.partition("=")[0].lstrip("+~") in PLACE_KEYS]


def notice(unbuilt: Sequence[Unbuilt], overrides: Sequence[str] = (), tried: bool = False) -> list[str]:
    """A heading and, per paper, the command that builds its missing outputs (or, once `report.build_missing`
    tried, the outputs that could not be built); [] when nothing is missing."""
    if not unbuilt:
        return []
    claims = sum(u.claims for u in unbuilt)
    if tried:
        head = (
            f"{claims} claims read outputs that could not be built although report.build_missing=true "
            "(their inputs are not available; the log says why):"
        )
        # a variant's outputs are not built by build_missing: its own command says how
        return [head, *(f"{u.paper}{_under(u)}: {', '.join([*u.files, *u.own_commands])}" for u in unbuilt)]
    head = (
        f"{claims} verdicts read outputs that are not built yet. Build them, then run `make report` again "
        "(or `make report ARGS=report.build_missing=true` to build only what the claims read, or "
        "`make report-fast` for an approximate report in minutes):"
    )
    lines = [head]
    for u in unbuilt:
        if u.files:
            build = f"make figures tables PAPER={u.paper} SOURCE={u.source}"
            lines.append(_under_preset(build, u.preset, [*overrides, *u.overrides]))
        lines += [_under_preset(command, u.preset) for command in u.own_commands]
    return lines


def _under_preset(command: str, preset: str, overrides: Sequence[str] = ()) -> str:
    """Make command `command` with `overrides` and, for another preset, protocol=<preset> in its ARGS."""
    extra = [*overrides] + ([] if preset == AUTHORS else [f"protocol={preset}"])
    if not extra:
        return command
    if "ARGS='" in command:
        return command.replace("ARGS='", f"ARGS='{' '.join(extra)} ", 1)
    return f"{command} ARGS='{' '.join(extra)}'"


def _under(u: Unbuilt) -> str:
    return "" if u.preset == AUTHORS else f" (protocol={u.preset})"
