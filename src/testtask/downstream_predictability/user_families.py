"""Own model families (families.yaml of the user folder, see testtask.user_files) merged into
`downstream_predictability.families`, so that the per-sample logs of a student's models are correlated with
compute beside the configured families. An entry has the fields of a configured family
(conf/downstream_predictability/families/cpu_mini.yaml, typed by `settings.FamilySpec`):

    my-family:                          # the family's key (what families_used names)
      label: "My models"                # shown in figures
      paper: training-on-the-test-task  # whose results root holds the samples: results/<paper>/<results_run>/
      samples_dir: samples              # below it: <stage>/<model>-<benchmark>/<task>.jsonl
      model: my-135m                    # the <model> prefix of those folders
      members:                          # listed, each with its compute (or `discover` with a compute section)
        - {name: base, samples: base, compute: 1.6e+20}     # 1.6e20 without the sign is text to YAML
        - {name: tuned, samples: e1/mcaux, compute: 1.7e+20}
      compute: null                     # optional
"""

from __future__ import annotations

from typing import Any

from testtask.downstream_predictability.settings import FamilySpec
from testtask.schema import violations
from testtask.user_files import UserFileError, plain


def merge(cfg: Any, file: Any) -> None:
    """The `testtask` config: each family of `file` joins `downstream_predictability.families` by its key (one of
    the configured keys is replaced whole, so applying the file twice changes nothing); every problem is one line
    naming the file and `<family>.<field>`."""
    lines: list[str] = []
    families = cfg.downstream_predictability.families
    for key, fields in file.data.items():
        entry = (
            {"compute": None, **plain(fields)} if isinstance(fields, dict) else fields
        )  # compute: optional
        typed, problems = violations(FamilySpec, entry, str(key))
        lines += dict.fromkeys(problems)  # once each: a union's alternatives say the same
        if typed is not None:
            families[str(key)] = entry
    if lines:
        raise UserFileError("\n".join(f"{file.shown}: {line}" for line in lines))
