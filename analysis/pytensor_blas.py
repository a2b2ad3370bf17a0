"""Whether PyTensor links a C BLAS here, and what its absence costs the authors' way of fitting (bambi + PyMC).

    python analysis/pytensor_blas.py [--m 50] [--n 500] [--effect bias] [--calls 3000]

A pip install has no system BLAS for PyTensor to link (NumPy's and SciPy's bundled OpenBLAS export prefixed
symbols), so PyTensor warns and runs its matrix-vector products (`Gemv`) in Python. This prints PyTensor's
`blas__ldflags` and, from its profiler, the share of the bambi model's log density and gradient that those
Python-implemented ops take at one pretrain-on-test configuration (`make bench-vs-authors` fits m = 50, n = 500,
bias). Measured, a linked BLAS (Intel MKL from PyPI) left the authors' fit time in that benchmark unchanged
(docs/pretrain-on-test.md, "Speed", with the commands to link it). Reads `data/published/pretrain-on-test/`.
"""

from __future__ import annotations

import argparse
import io
import re
import warnings
from pathlib import Path

import numpy as np

from testtask.pipeline import configured
from testtask.pretrain_on_test import accuracies, fits
from testtask.pretrain_on_test.hierarchical import build_bambi

ROOT = Path("data/published/pretrain-on-test")


def op_classes(m: int, n: int, effect: str, calls: int, root: Path = ROOT) -> list[tuple[float, str, str]]:
    """PyTensor's profile of the bambi model's log density and gradient, by op class: (% of the ops' time,
    "C" or "Py", class name)."""
    frame = accuracies.load(root, collection="accuracies_from_paper", m=m, n=n)
    settings = configured("pretrain-on-test")
    data = fits.configuration_data(frame, effect, settings.counts)
    model = build_bambi(data.to_long(), fits.spec_from(settings, backend="bambi"))
    model.build()
    function = model.backend.model.logp_dlogp_function(ravel_inputs=True, profile=True)
    function.set_extra_values({})
    point = np.concatenate([np.ravel(v) for v in model.backend.model.initial_point().values()])
    for _ in range(calls):
        function(point)
    text = io.StringIO()
    function._pytensor_function.profile.summary(file=text, n_ops_to_print=50, n_apply_to_print=0)
    # the "Class" table (the "Ops" table after it splits the same time by op):
    # <% time> <sum %> <apply time> <time per call> <type> <#call> <#apply> <Class name>
    classes = text.getvalue().split("\nClass\n", 1)[1].split("\nOps\n", 1)[0]
    rows = re.findall(r"^\s+([\d.]+)%\s+[\d.]+%\s+\S+\s+\S+\s+(C|Py)\s+\d+\s+\d+\s+(\S+)$", classes, re.M)
    return [(float(share), kind, name) for share, kind, name in rows]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--m", type=int, default=50)
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--effect", default="bias")
    parser.add_argument("--calls", type=int, default=3000)
    args = parser.parse_args()
    with warnings.catch_warnings(record=True):  # PyTensor's BLAS warning: this script reports it instead
        warnings.simplefilter("always")
        import pytensor

        flags = pytensor.config.blas__ldflags
        python = [
            (share, name)
            for share, kind, name in op_classes(args.m, args.n, args.effect, args.calls)
            if kind == "Py"
        ]
    print(f"PyTensor blas__ldflags: {flags!r} ({'a C BLAS is linked' if flags else 'no C BLAS'})")
    print(
        f"m = {args.m}, n = {args.n}, {args.effect}: Python-implemented ops take "
        f"{sum(share for share, _ in python):.1f}% of the time of the bambi model's log density and gradient "
        f"({', '.join(name for _, name in python) or 'none'})"
    )


if __name__ == "__main__":
    main()
