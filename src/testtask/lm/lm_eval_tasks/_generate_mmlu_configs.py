"""Write the per-subject YAMLs of the `mmlu_cloze` and `mmlu_mc` groups (run once; the output is committed).

The 57 subjects, their dataset names and their categories (stem, other, social sciences, humanities) are
read from lm-eval's own `mmlu/default` task folder, so the groups cover exactly what lm-eval's `mmlu` does:

    python -m testtask.lm.lm_eval_tasks._generate_mmlu_configs
"""

from __future__ import annotations

from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
CATEGORIES = {
    "stem": "stem",
    "other": "other",
    "social_sciences": "social sciences",
    "humanities": "humanities",
}
# variant -> (template file, description of a subject, metrics aggregated over subjects)
VARIANTS = {
    "cloze": (
        "_mmlu_cloze_template_yaml",
        # The authors' fork words the cloze description as the MMLU one (RicardoDominguez/lm-evaluation-harness
        # @sft lm_eval/tasks/mmlu/cloze/mmlu_<subject>.yaml), although no options follow.
        "The following are multiple choice questions (with answers) about {}.\n\n",
        ["acc", "acc_norm", "brier_score"],
    ),
    "mc": (
        "_mmlu_mc_template_yaml",
        "The following are multiple choice questions (with answers) about {}.\n\n",
        ["acc", "brier_score"],
    ),
}


def lm_eval_subjects() -> dict[str, str]:
    """Subject (the `cais/mmlu` config name) -> category, from lm-eval's `mmlu/default/mmlu_<subject>.yaml`."""
    import lm_eval.tasks

    folder = Path(lm_eval.tasks.__file__).resolve().parent / "mmlu" / "default"
    subjects = {}
    for path in sorted(folder.glob("mmlu_*.yaml")):
        cfg = yaml.safe_load(path.read_text())
        tag = cfg["tag"]
        category = tag.removeprefix("mmlu_").removesuffix("_tasks")
        if category not in CATEGORIES:
            raise ValueError(f"{path}: unexpected tag {tag!r}")
        subjects[cfg["dataset_name"]] = category
    if len(subjects) != 57:
        raise ValueError(f"{folder}: {len(subjects)} MMLU subjects, expected 57")
    return subjects


def _dump(path: Path, cfg: dict) -> None:
    path.write_text(yaml.safe_dump(cfg, sort_keys=False, width=110, allow_unicode=True))


def write_variant(variant: str, subjects: dict[str, str]) -> None:
    """The group, its four category groups and one task per subject, in the folder `mmlu_<variant>/`."""
    template, description, metrics = VARIANTS[variant]
    folder = HERE / f"mmlu_{variant}"
    folder.mkdir(exist_ok=True)
    for old in folder.glob("*.yaml"):
        old.unlink()
    aggregate = [{"metric": m, "weight_by_size": True} for m in metrics]
    _dump(
        folder / f"_mmlu_{variant}.yaml",
        {
            "group": f"mmlu_{variant}",
            "task": [f"mmlu_{c}_{variant}" for c in CATEGORIES],
            "aggregate_metric_list": aggregate,
            "metadata": {"version": 2},
        },
    )
    for category, alias in CATEGORIES.items():
        _dump(
            folder / f"_mmlu_{category}_{variant}.yaml",
            {
                "group": f"mmlu_{category}_{variant}",
                "group_alias": alias,
                "task": [f"mmlu_{category}_{variant}_tasks"],
                "aggregate_metric_list": aggregate,
                "metadata": {"version": 2},
            },
        )
    for subject, category in sorted(subjects.items()):
        _dump(
            folder / f"mmlu_{subject}_{variant}.yaml",
            {
                "include": f"../{template}",
                "task": f"mmlu_{subject}_{variant}",
                "task_alias": subject,
                "tag": f"mmlu_{category}_{variant}_tasks",
                "dataset_name": subject,
                "description": description.format(subject.replace("_", " ")),
            },
        )


def main() -> None:
    subjects = lm_eval_subjects()
    for variant in VARIANTS:
        write_variant(variant, subjects)
    print(f"wrote {len(subjects)} subjects x {len(VARIANTS)} variants below {HERE}")


if __name__ == "__main__":
    main()
