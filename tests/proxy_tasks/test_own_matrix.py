"""A student's own score matrix in proxy-tasks: declared in the user folder's matrices.yaml, read from a CSV, named by
the student's label in every output; bad input, and a setting the matrix cannot serve, is one line naming the file and
the row or column, or the key to change."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from tests.conftest import built, tmp_config
from testtask.errors import InputError
from testtask.pipeline import build, make_context
from testtask.proxy_tasks.matrices import load_matrix
from testtask.proxy_tasks.settings import Reader

PAPER = "proxy-tasks"
KEY = "proxy_tasks"
LABEL = "Our leaderboard"
TASKS = ["reading", "trivia", "logic", "code", "science", "maths"]
OTHER_LABELS = ("train-before-test", "training-on-the-test-task")  # the paper's matrices' labels start so


def scores(models: int = 12, seed: int = 0) -> pd.DataFrame:
    """Models x tasks: a common ability plus noise, so that the tasks correlate."""
    rng = np.random.default_rng(seed)
    ability = np.linspace(0.1, 0.9, models)
    values = 0.2 + 0.6 * ability[:, None] + rng.normal(0, 0.04, (models, len(TASKS)))
    return pd.DataFrame(values.round(3), index=[f"m{i:02d}" for i in range(models)], columns=TASKS)


def write_csv(path: Path, frame: pd.DataFrame) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index_label="model")
    return path


def user_folder(tmp_path: Path, models: int = 12, **fields: object) -> Path:
    """A user folder with matrices.yaml declaring `board` (scores, standard errors, top_t 3, plus `fields`)."""
    user = tmp_path / "user"
    frame = scores(models)
    write_csv(user / "data" / "board.csv", frame)
    write_csv(user / "data" / "board_se.csv", (frame * 0 + 0.015).round(3))
    entry = {
        "file": "data/board.csv",
        "label": LABEL,
        "stderr_file": "data/board_se.csv",
        "top_t": 3,
        **fields,
    }
    (user / "matrices.yaml").write_text(
        yaml.safe_dump({"board": {k: v for k, v in entry.items() if v != "-"}})
    )
    return user


def config(tmp_path: Path, user: Path, *overrides: str):
    return tmp_config(
        tmp_path, f"user_dir={user}", f"paper={PAPER}", f"{KEY}.evaluation.bootstrap=100", *overrides
    )


def one_line(err: pytest.ExceptionInfo) -> str:
    """The message of an InputError, which the command line prints as its one line."""
    assert isinstance(err.value, InputError), type(err.value)
    text = err.value.args[0] if isinstance(err.value, KeyError) else str(err.value)
    assert "\n" not in text, text
    return text


# --- reading ---------------------------------------------------------------------------------------------------


def test_an_own_matrix_joins_the_matrices_under_its_key_and_label(tmp_path):
    user = user_folder(tmp_path)
    ctx = make_context(config(tmp_path, user), PAPER)
    entry = ctx.settings.matrix("board")
    assert (entry.reader, entry.label, entry.top_t, entry.n_models) == (Reader.csv, LABEL, 3, None)
    assert Path(entry.file) == user / "data" / "board.csv"  # relative to the folder of matrices.yaml
    assert list(ctx.settings.matrices)[:4] == ["tbt_direct", "tbt_trained", "tott_base", "tott_adjusted"]
    matrix = load_matrix(ctx, "board")
    assert matrix.label == LABEL and matrix.source == str(user / "data" / "board.csv")
    assert list(matrix.scores.columns) == TASKS and matrix.scores.shape == (12, 6)
    assert matrix.scores.at["m03", "logic"] == scores().at["m03", "logic"]
    assert (matrix.stderr == 0.015).all().all()
    assert matrix.notes[0].startswith(f"scores: {user / 'data' / 'board.csv'} (SHA-256 ")
    assert ctx.settings.method_for("board").top_t == 3


def test_an_empty_cell_is_a_missing_score_and_drops_its_model(tmp_path):
    user = user_folder(tmp_path)
    text = (user / "data" / "board.csv").read_text().replace("m04,", "m04,,", 1)
    cells = text.splitlines()
    cells[5] = ",".join(
        cells[5].split(",")[:2] + cells[5].split(",")[3:]
    )  # m04: reading empty, 6 cells in all
    (user / "data" / "board.csv").write_text("\n".join(cells) + "\n")
    matrix = load_matrix(make_context(config(tmp_path, user), PAPER), "board")
    assert matrix.dropped_models == {"m04": ["reading"]} and len(matrix.scores) == 11


@pytest.mark.parametrize(
    ("change", "line"),
    [
        (
            lambda f: f.replace("0.", "high", 1),
            "{scores}: row 'm00' (line 2), column 'reading': 'high{rest}' is not a score: expected a finite number, "
            "or an empty cell where the model has none",
        ),
        (
            lambda f: f + f.splitlines()[3] + "\n",
            "{scores}: row 'm02' (line 14) repeats the model of line 4; each model has one row",
        ),
        (
            lambda f: f.replace("science", "logic", 1),
            "{scores}: column 'logic' appears twice in the header (columns 4 and 6); each task has one column",
        ),
        (
            lambda f: f.replace("\n", ",0.5\n", 2).replace("maths,0.5", "maths", 1),
            "{scores}: row 'm00' (line 2) has 8 cells, the header 7; one per task after the model's name",
        ),
        (
            lambda f: "\n".join(f.splitlines()[:5]) + "\n",
            "{scores}: only 4 models have a score for every task of ['reading', 'trivia', 'logic', 'code', "
            "'science', 'maths']; the analyses need at least 5",
        ),
        (
            lambda f: "\n".join(",".join(line.split(",")[:2]) for line in f.splitlines()) + "\n",
            "{scores}: has one task column ('reading'); the analyses need a target and at least one other task",
        ),
    ],
    ids=["non-numeric", "duplicated-model", "duplicated-task", "ragged-row", "too-few-models", "one-task"],
)
def test_a_bad_score_csv_is_one_line_naming_the_file_and_the_row_or_column(tmp_path, change, line):
    user = user_folder(tmp_path, stderr_file="-")  # the scores alone
    path = user / "data" / "board.csv"
    original = path.read_text()
    path.write_text(change(original))
    rest = original.splitlines()[1].split(",")[1][2:]  # what followed "0." in the first score
    with pytest.raises(InputError) as err:
        load_matrix(make_context(config(tmp_path, user), PAPER), "board")
    assert one_line(err) == line.format(scores=path, rest=rest)


def test_a_constant_column_is_refused_naming_it(tmp_path):
    user = user_folder(tmp_path)
    frame = scores()
    frame["code"] = 0.25
    path = write_csv(user / "data" / "board.csv", frame)
    with pytest.raises(InputError) as err:
        load_matrix(make_context(config(tmp_path, user), PAPER), "board")
    assert one_line(err) == (
        f"{path}: column 'code' has the same score (0.25) for every model: it cannot be normalised; drop the column"
    )


@pytest.mark.parametrize(
    ("change", "line"),
    [
        (
            lambda f: f.drop(columns="maths"),
            "{se}: lacks column 'maths'; the standard errors' CSV must have the models (rows) and tasks (columns) of "
            "{scores}",
        ),
        (
            lambda f: f.drop(index="m05"),
            "{se}: lacks row 'm05'; the standard errors' CSV must have the models (rows) and tasks (columns) of "
            "{scores}",
        ),
        (
            lambda f: f.rename(columns={"code": "coding"}),
            "{se}: has column 'coding', which {scores} has not; the standard errors' CSV must have the models (rows) "
            "and tasks (columns) of {scores}",
        ),
        (
            lambda f: f.assign(logic=-0.01),
            "{se}: row 'm00' (line 2), column 'logic': '-0.01' is not a standard error: expected a finite number "
            ">= 0, or an empty cell where the model has none",
        ),
    ],
    ids=["lacks-column", "lacks-row", "other-column", "negative"],
)
def test_a_stderr_csv_of_another_shape_is_one_line_naming_both_files(tmp_path, change, line):
    user = user_folder(tmp_path)
    se = user / "data" / "board_se.csv"
    write_csv(se, change(pd.read_csv(se, index_col="model")))
    with pytest.raises(InputError) as err:
        load_matrix(make_context(config(tmp_path, user), PAPER), "board")
    assert one_line(err) == line.format(se=se, scores=user / "data" / "board.csv")


@pytest.mark.parametrize(
    ("fields", "key"),
    [({"file": "data/none.csv"}, "file"), ({"stderr_file": "data/none.csv"}, "stderr_file")],
)
def test_a_missing_csv_names_the_key_to_change(tmp_path, fields, key):
    user = user_folder(tmp_path, **fields)
    with pytest.raises(InputError) as err:
        load_matrix(make_context(config(tmp_path, user), PAPER), "board")
    assert one_line(err) == (
        f"{user / 'data' / 'none.csv'} does not exist: change {KEY}.matrices.board.{key} (`{key}` of board in the "
        "user folder's matrices.yaml)"
    )


@pytest.mark.parametrize(
    ("data", "line"),
    [
        ({"board": {"file": "b.csv"}}, "board.label: missing, expected a non-empty string"),
        (
            {"board": {"file": "b.csv", "label": LABEL, "top_t": 0}},
            "board.top_t = 0: expected a positive integer",
        ),
        (
            {"board": {"file": "b.csv", "label": LABEL, "stderr": "s.csv"}},
            "board.stderr: unknown key (did you mean stderr_file?)",
        ),
        (
            {"tbt_direct": {"file": "b.csv", "label": LABEL}},
            "tbt_direct: the paper's matrices have this key (tbt_direct, tbt_trained, tott_base, tott_adjusted); "
            "choose another",
        ),
    ],
    ids=["no-label", "bad-top-t", "unknown-field", "paper-key"],
)
def test_a_bad_matrices_yaml_names_the_file_and_the_field(tmp_path, data, line):
    user = tmp_path / "user"
    user.mkdir()
    (user / "matrices.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(InputError) as err:
        config(tmp_path, user)
    assert one_line(err).startswith(f"{user / 'matrices.yaml'}: {line}"), one_line(err)


# --- every analysis: a setting the matrix cannot serve -----------------------------------------------------------


BOARD = [
    f"{KEY}.figure_1.matrices=[board]",
    f"{KEY}.table_3.matrices=[board]",
    f"{KEY}.table_robustness.matrices=[board]",
    f"{KEY}.table_loo.matrices=[board]",
    f"{KEY}.figure_loo.panels=[{{matrix:board,target:maths}}]",
]


@pytest.mark.parametrize(
    ("kind", "number", "models", "fields", "overrides", "line"),
    [
        (
            "figure",
            1,
            12,
            {},
            [],
            f"{KEY}.figure_1.target = 'gsm8k': expected a task of matrix 'board' ({{scores}}): {', '.join(TASKS)}",
        ),
        (
            "figure",
            "loo",
            12,
            {},
            [f"{KEY}.figure_loo.panels=[{{matrix:board,target:maths}},{{matrix:board,target:gsm8k}}]"],
            f"{KEY}.figure_loo.panels[1].target = 'gsm8k': expected a task of matrix 'board' ({{scores}}): "
            f"{', '.join(TASKS)}",
        ),
        (
            "figure",
            "loo",
            8,
            {},
            [],
            f"{KEY}.consistency.n_models = 10: expected at most 7 for matrix 'board' (8 models, one held out in each "
            "leave-one-model-out fit); or give matrix 'board' its own n_models in the user folder's matrices.yaml",
        ),
        (
            "figure",
            "loo",
            12,
            {"n_models": 12},
            [],
            f"{KEY}.matrices.board.n_models = 12: expected at most 11 for matrix 'board' (12 models, one held out in "
            "each leave-one-model-out fit) (`n_models` of board in the user folder's matrices.yaml)",
        ),
        (
            "figure",
            "loo",
            12,
            {"top_t": "-"},
            [],
            f"{KEY}.consistency.top_t = 10: expected at most 5, the candidate tasks of matrix 'board' (its 6 tasks "
            "less the target); or give matrix 'board' its own top_t in the user folder's matrices.yaml",
        ),
        (
            "figure",
            "loo",
            12,
            {"stderr_file": "-"},
            [],
            f"{KEY}.robustness.mode = stderr_proxy: matrix 'board' has no standard errors; give it a stderr_file, or "
            "robustness: none, in the user folder's matrices.yaml",
        ),
        (
            "table",
            3,
            8,
            {},
            [f"{KEY}.table_3.target=maths"],
            f"{KEY}.table_3.configs[2] = [10, 25]: expected n at most 8, the models of matrix 'board'",
        ),
        (
            "table",
            3,
            12,
            {"top_t": 6},
            [f"{KEY}.table_3.target=maths"],
            f"{KEY}.matrices.board.top_t = 6: expected at most 5, the candidate tasks of matrix 'board' (its 6 tasks "
            "less the target) (`top_t` of board in the user folder's matrices.yaml)",
        ),
        (
            "table",
            "loo",
            12,
            {},
            [f"{KEY}.table_loo.targets=[maths,gsm8k]"],
            f"{KEY}.table_loo.targets = ['maths', 'gsm8k']: 'gsm8k' is a task of none of {KEY}.table_loo.matrices "
            f"(board: {', '.join(TASKS)})",
        ),
        (
            "table",
            "loo",
            8,
            {"robustness": "none"},
            [f"{KEY}.table_loo.targets=[maths]"],
            f"{KEY}.consistency.n_models = 10: expected at most 7 for matrix 'board' (8 models, one held out in each "
            "leave-one-model-out fit); or give matrix 'board' its own n_models in the user folder's matrices.yaml",
        ),
        (
            "table",
            "robustness",
            4,
            {},
            [],
            "{scores}: only 4 models have a score for every task of ['reading', 'trivia', 'logic', 'code', 'science', "
            "'maths']; the analyses need at least 5",
        ),
    ],
    ids=[
        "figure-1-target",
        "figure-loo-target",
        "figure-loo-n-models",
        "figure-loo-own-n-models",
        "figure-loo-top-t",
        "figure-loo-no-stderr",
        "table-3-n",
        "table-3-own-top-t",
        "table-loo-targets",
        "table-loo-n-models",
        "table-robustness-too-small",
    ],
)
def test_each_analysis_refuses_what_the_matrix_cannot_serve_naming_the_key(
    tmp_path, kind, number, models, fields, overrides, line
):
    user = user_folder(tmp_path, models=models, **fields)
    cfg = config(tmp_path, user, *BOARD, *overrides)
    with pytest.raises(InputError) as err:
        build(cfg, kind, [number])
    assert one_line(err) == line.format(scores=user / "data" / "board.csv")


def test_the_command_prints_the_one_line_and_exits_1(tmp_path):
    user = user_folder(tmp_path)
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from testtask.cli import main; main()",
            "action=figure",
            "figure=1",
            f"paper={PAPER}",
            f"user_dir={user}",
            f"figures_dir={tmp_path / 'figures'}",
            f"{KEY}.figure_1.matrices=[board]",
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines()[-1] == (
        f"error: {KEY}.figure_1.target = 'gsm8k': expected a task of matrix 'board' ({user / 'data' / 'board.csv'}): "
        f"{', '.join(TASKS)}"
    )
    assert "Traceback" not in done.stderr


# --- every analysis: the student's label, never another paper's ---------------------------------------------------


def test_every_analysis_names_the_matrix_by_the_students_label(tmp_path):
    user = user_folder(tmp_path)
    cfg = config(
        tmp_path,
        user,
        *BOARD,
        f"{KEY}.figure_1.target=maths",
        f"{KEY}.table_3.target=maths",
        f"{KEY}.table_3.repeats=2",
        f"{KEY}.table_loo.targets=[maths,code]",
    )
    build(cfg, "figure", [1, "loo"])
    build(cfg, "table", [3, "robustness", "loo"])
    folder = built(cfg, PAPER)
    assert folder.parent.parent.parent.name == "variants"  # picking the matrix by overrides makes a variant
    sidecars = {
        name: json.loads((folder / f"{name}.json").read_text()) for name in ("figure-1", "figure-loo")
    }
    sidecars |= {name: json.loads((folder / f"{name}.json").read_text()) for name in ("table-3", "table-loo")}
    sidecars["table-robustness"] = json.loads((folder / "table-robustness.json").read_text())
    for name in ("figure-1", "figure-loo"):
        (panel,) = sidecars[name]["panels"]
        assert panel["matrix"]["label"] == LABEL and panel["matrix"]["source"] == str(
            user / "data" / "board.csv"
        )
    assert sidecars["figure-loo"]["panels"][0]["n_models"] == 12
    assert {row["label"] for row in sidecars["table-3"]["rows"]} == {LABEL}
    assert [(row["label"], row["target"]) for row in sidecars["table-loo"]["rows"]] == [
        (LABEL, "maths"),
        (LABEL, "code"),
    ]
    assert sidecars["table-robustness"]["matrices"]["board"]["matrix"]["label"] == LABEL
    # every output names the CSV it read by its SHA-256 (the tables once recorded neither path nor hash)
    digest = hashlib.sha256((user / "data" / "board.csv").read_bytes()).hexdigest()
    for name in ("table-3", "table-loo"):
        matrix = sidecars[name]["matrices"]["board"]
        assert matrix["source"] == str(user / "data" / "board.csv"), name
        assert any(digest in note for note in matrix["notes"]), name
    table = pd.read_csv(folder / "table-loo.csv")
    assert set(table["matrix"]) == {"board"}
    for name, sidecar in sidecars.items():
        text = json.dumps({k: v for k, v in sidecar.items() if k != "provenance"})
        assert not any(other in text for other in OTHER_LABELS), name
