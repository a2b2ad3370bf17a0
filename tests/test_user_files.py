"""Own extension files (testtask.user_files, docs/extending.md): each kind is used through the real code path, and
a bad field is an error naming the file and the field. No test here edits a file under conf/."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import yaml

# The base of every user-file error, imported so that these tests fail, not error, on code without user files.
from testtask.errors import InputError as UserFileError

STUDENT = {
    "paper_name": "Student-7B",
    "train_date": "2024-06",
    "params_b": 7,
    "tokens_t": 4.0,
    "hf_repo": "student/student-model-7b",
    "family": "student",
    "language": "EN",
}


def write(folder: Path, name: str, data: object) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def analysis_config(tmp_path: Path, user: Path, *overrides: str):
    from tests.conftest import tmp_config

    return tmp_config(tmp_path, f"user_dir={user}", *overrides)


# --- models.yaml ------------------------------------------------------------------------------------------------


def test_own_model_joins_the_registry_of_the_analysis_and_the_runner(tmp_path):
    from testtask.pipeline import make_context

    user = tmp_path / "user"
    write(user, "models.yaml", {"base": {"student-model-7b": STUDENT}})
    ctx = make_context(analysis_config(tmp_path, user), "training-on-the-test-task")
    info = ctx.settings.release.registry.get("student-model-7b")
    assert (info.params_b, info.tokens_t, info.train_date) == (7.0, 4.0, "2024-06")
    assert info.is_newer("2023-11") and "pythia-410m" in ctx.settings.release.registry  # the paper's stay

    from hydra import compose, initialize_config_dir

    from testtask import user_files
    from testtask.paths import conf_dir
    from testtask.training_on_the_test_task.runner.main import USER_FILES, registry_entry, settings_of

    with initialize_config_dir(config_dir=str(conf_dir()), version_base=None):
        cfg = compose("training_on_the_test_task_run", [f"user_dir={user}", "model=student-model-7b"])
    user_files.apply(cfg, USER_FILES)
    assert registry_entry(settings_of(cfg)).hf_repo == "student/student-model-7b"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"train_date": "June"},
            "base.student-model-7b.train_date = 'June': expected a 'YYYY-MM' month (quoted)",
        ),
        ({"tokens": 4}, "base.student-model-7b.tokens: unknown key (did you mean tokens_t?)"),
        ({"params_b": None}, "base.student-model-7b.params_b = None: expected a number > 0"),
    ],
)
def test_a_bad_model_field_names_the_file_and_the_field(tmp_path, change, message):
    user = tmp_path / "user"
    write(user, "models.yaml", {"base": {"student-model-7b": {**STUDENT, **change}}})
    with pytest.raises(UserFileError, match=re.escape("user/models.yaml: " + message)):
        analysis_config(tmp_path, user)


def test_a_missing_model_field_names_the_file(tmp_path, monkeypatch):
    user = tmp_path / "env-user"
    write(
        user,
        "models.yaml",
        {"base": {"student-model-7b": {k: v for k, v in STUDENT.items() if k != "family"}}},
    )
    monkeypatch.setenv("TESTTASK_USER_DIR", str(user))  # the folder from the environment
    from tests.conftest import tmp_config

    with pytest.raises(
        UserFileError, match=r"env-user/models\.yaml: base\.student-model-7b\.family: missing, expected"
    ):
        tmp_config(tmp_path)


def test_an_own_model_is_recorded_with_its_file_and_a_replaced_paper_entry_is_not(tmp_path):
    from testtask.pipeline import make_context

    user = tmp_path / "user"
    paper_entry = {**STUDENT, "paper_name": "Pythia-410M", "params_b": 0.41, "tokens_t": 0.3}
    path = write(user, "models.yaml", {"base": {"student-model-7b": STUDENT, "pythia-410m": paper_entry}})
    release = make_context(analysis_config(tmp_path, user), "training-on-the-test-task").settings.release
    # pythia-410m stays the paper's model (its missing results stay the paper's to list), student-model-7b is own
    assert release.own == {"student-model-7b": str(path)}


def test_an_own_model_without_results_is_left_out_and_a_paper_model_is_not(caplog):
    from testtask.lm.models import ModelInfo, ModelRegistry
    from testtask.lm.release import Release
    from testtask.lm.results import AbsentResults

    def info(name: str) -> ModelInfo:
        return ModelInfo(name, "base", "2024-06", 7.0, 2.0, name, "EN", None)

    registry = ModelRegistry([info("paper-7b"), info("student-7b"), info("tutor-7b")])
    own = {"student-7b": "conf/user/models.yaml", "tutor-7b": "conf/user/models.yaml"}
    release = Release("evaluations", registry, AbsentResults(), "key", own)
    table = pd.DataFrame({"model": ["tutor-7b"]})  # the source lacks paper-7b and student-7b
    with caplog.at_level(logging.INFO, logger="testtask.lm.release"):
        for _ in range(3):  # one line per source, however many figures ask
            seen = release.registry_for(table, "the-source")
    assert seen.names() == ["paper-7b", "tutor-7b"]  # the paper's model stays, to be reported missing
    said = [r.getMessage() for r in caplog.records if "own model" in r.getMessage()]
    assert said == [
        "own model student-7b (conf/user/models.yaml) has no results in the-source: left out of its analyses"
    ]


def test_an_own_entry_of_an_unknown_model_is_refused():
    from testtask.lm.models import Models
    from testtask.schema import load

    models = {"base": {}, "instruct": {}, "extra": {}, "own": {"ghost-7b": "conf/user/models.yaml"}}
    with pytest.raises(ValueError, match=r"own\.ghost-7b = 'ghost-7b': expected a model of"):
        load(Models, models, "models")


@pytest.fixture(scope="module")
def releases(tmp_path_factory) -> Path:
    """training-on-the-test-task's and train-before-test's releases fetched (`make data`) into a temporary folder."""
    from tests.conftest import mirror_dir
    from testtask.pipeline import compose, run

    mirror = mirror_dir()
    if mirror is None or not all(
        (mirror / key).is_dir() for key in ("training_on_the_test_task", "train_before_test")
    ):
        pytest.skip("the published-data mirror (../shared/data) lacks the releases")
    data = tmp_path_factory.mktemp("published")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TESTTASK_DATA_MIRROR", str(mirror))
        run(compose(["paper=proxy-tasks", f"data.dest={data}", "action=data"]))  # and the releases it reads
    return data


def test_own_files_make_a_variant_only_of_the_papers_that_read_them(tmp_path):
    """A build that the user's own files change is a variant named after the files (the paper's own folder holds
    only what its settings build); a file a paper does not read changes nothing of its builds, and own_files=false
    builds the paper's settings alone."""
    import hashlib

    from testtask.pipeline import compose, typed, variant

    user = tmp_path / "user"
    benchmarks = {"mode": "add", "categories": {"Code": {"name": "Code", "benchmarks": ["humaneval"]}}}
    path = write(user, "benchmarks.yaml", benchmarks)
    write(user, "models.yaml", {"base": {"student-7b": STUDENT}})

    def of(paper: str, *extra: str):
        return variant(typed(compose([f"user_dir={user}", *extra])), paper, list(extra))

    tbt = of("train-before-test")
    assert tbt.name == "own=benchmarks" and tbt.user_files == {
        "benchmarks.yaml": hashlib.sha256(path.read_bytes()).hexdigest()
    }
    assert set(tbt.differs) == {"train_before_test.categories.Code"}
    assert of("proxy-tasks").name == "own=benchmarks+models"  # it reads both papers' settings
    pot = of("pretrain-on-test")  # reads neither file
    assert pot.name is None and pot.user_files == {} and pot.fingerprint == pot.preset_fingerprint
    alone = of("train-before-test", "own_files=false")
    assert alone.name is None and alone.user_files == {} and alone.fingerprint == tbt.preset_fingerprint
    both = of("train-before-test", "train_before_test.pca.standardize=false")
    assert both.name == "own=benchmarks,train_before_test.pca.standardize=false"


def test_an_own_model_never_breaks_the_published_builds(releases, tmp_path, caplog):
    """With an own model registered, the papers that read the registry build from the authors' release (which
    has no results of it): the model is left out with one info line, the numbers are those of a build without it,
    and every sidecar's provenance names the user file by its hash."""
    import hashlib

    from tests.conftest import built
    from testtask.pipeline import build, compose

    user = tmp_path / "user"
    path = write(user, "models.yaml", {"base": {"student-7b": {**STUDENT, "tokens_t": 2.0}}})
    digest = hashlib.sha256(path.read_bytes()).hexdigest()

    def config(paper: str, user_dir: Path, figures: str):
        return compose(
            [
                f"paper={paper}",
                f"data.dest={releases}",
                f"figures_dir={tmp_path / figures}",
                f"user_dir={user_dir}",
            ]
        )

    tott = config("training-on-the-test-task", user, "figures")
    proxy = config("proxy-tasks", user, "figures")
    proxy.proxy_tasks.figure_loo.panels = [{"matrix": "tott_base", "target": "gsm8k"}]
    proxy.proxy_tasks.evaluation.bootstrap = 50
    with caplog.at_level(logging.INFO, logger="testtask.lm.release"):
        build(tott, "figure", [1, 3, 8])  # model tables, the older models' split, the checkpoints
        build(tott, "table", None)
        build(proxy, "figure", ["loo"])  # reads the registry through training-on-the-test-task's settings
    said = [r.getMessage() for r in caplog.records if "own model" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith(f"own model student-7b ({path}) has no results in ")

    folders = [built(tott, "training-on-the-test-task"), built(proxy, "proxy-tasks")]
    sidecars = [p for folder in folders for p in folder.rglob("*.json")]
    assert len(sidecars) >= 5
    for sidecar in sidecars:
        settings = json.loads(sidecar.read_text(encoding="utf-8"))["provenance"]["settings"]
        assert settings["user_files"] == {"models.yaml": digest}, sidecar
    # the own model changes the settings the papers read (their model registry): the builds are a variant named
    # after the file, and the paper's own folder is left as it was (nothing built there)
    assert all(folder.parts[-4:-2] == ("variants", "own=models") for folder in folders), folders
    assert all(
        json.loads(p.read_text(encoding="utf-8"))["provenance"]["settings"]["variant"] == "own=models"
        for p in sidecars
    )
    assert not (tmp_path / "figures" / "training-on-the-test-task").exists()

    alone = config("training-on-the-test-task", tmp_path / "no-user", "figures-alone")
    build(alone, "figure", [1, 3])
    for number in (1, 3):
        ours = json.loads((folders[0] / f"figure-{number}.json").read_text(encoding="utf-8"))
        theirs = json.loads((built(alone, "training-on-the-test-task") / f"figure-{number}.json").read_text())
        assert ours["panels"] == theirs["panels"]
        assert ours["excluded_models"] == theirs["excluded_models"]


# --- datasets.yaml ----------------------------------------------------------------------------------------------

TOPICS = {
    "source": "file",
    "path": "data/topics.csv",  # relative to the file's folder
    "text": "body",
    "label": "topic",
    "label_map": {"sport": 0, "politics": 1},
    "classes": ["sport", "politics"],
    "description": "The text is a headline. Answer with its topic.",
}


def pot_config(user: Path, results: Path, *overrides: str):
    from hydra import compose, initialize_config_dir

    from testtask.paths import conf_dir

    with initialize_config_dir(config_dir=str(conf_dir()), version_base=None):
        return compose(
            "pretrain_on_test_run",
            [
                f"user_dir={user}",
                "dataset=mytopics",
                "lm=bert",
                "m=4",
                "n=6",
                "repetitions=2",
                "device=cpu",
                f"results_dir={results}",
                "quiet_transformers=false",
                *overrides,
            ],
        )


def test_own_dataset_runs_through_the_runner_with_a_time_estimate(tmp_path, monkeypatch, caplog):
    from testtask.pretrain_on_test.runner import main

    user = tmp_path / "user"
    (user / "data").mkdir(parents=True)
    rows = [{"body": f"headline {i}", "topic": ("sport", "politics")[i % 2]} for i in range(40)]
    pd.DataFrame(rows).to_csv(user / "data" / "topics.csv", index=False)
    write(user, "datasets.yaml", {"mytopics": TOPICS})

    class Stub:  # trains nothing: the test is about the dataset, not the model
        def run(self, data, sub, seed):
            assert sorted(data["label"].unique()) == [0, 1] and len(data) == 40
            return {"base": 0.5, "extra": 0.5, "test": 0.5}, {}

    monkeypatch.setattr("testtask.pretrain_on_test.runner.cell.make_protocol", lambda *a, **k: Stub())
    with caplog.at_level(logging.INFO, logger="testtask.runner"):
        csv = Path(main.run(pot_config(user, tmp_path / "results")))
    assert csv == tmp_path / "results" / "m4" / "n6" / "bert" / "mytopics" / "accuracies.csv"
    assert len(pd.read_csv(csv)) == 2
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("mytopics: ")]
    assert said and said[0].startswith("mytopics: 2 repetitions, about ") and "6 x 110M parameters" in said[0]
    # a second cell of the same lm_type estimates from the first one's run log
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="testtask.runner"):
        main.run(pot_config(user, tmp_path / "results", "m=8"))
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("mytopics: ")]
    assert "mean of 2 earlier bert repetitions on cpu" in said[0]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"classes": "sport"},
            "mytopics.classes: expected a non-empty list, each item a non-empty string, got 'sport'",
        ),
        ({"colour": "red"}, "mytopics.colour: unknown field"),
        ({"label_map": {"sport": "0"}}, "mytopics.label_map.sport: expected an integer >= 0, got '0'"),
        ({"path": None}, "mytopics.path: expected a non-empty string, got None"),
    ],
)
def test_a_bad_dataset_field_names_the_file_and_the_field(tmp_path, change, message):
    from testtask.pretrain_on_test.runner import main

    user = tmp_path / "user"
    write(user, "datasets.yaml", {"mytopics": {**TOPICS, **change}})
    with pytest.raises(UserFileError, match=r"user/datasets\.yaml: " + message.replace("(", r"\(")):
        main.run(pot_config(user, tmp_path / "results"))


def test_a_missing_dataset_field_names_the_file_and_the_field(tmp_path):
    from testtask.pretrain_on_test.runner import main

    user = tmp_path / "user"
    write(user, "datasets.yaml", {"mytopics": {k: v for k, v in TOPICS.items() if k != "classes"}})
    with pytest.raises(UserFileError, match=r"user/datasets\.yaml: mytopics\.classes: missing \(required\)"):
        main.run(pot_config(user, tmp_path / "results"))


# --- benchmarks.yaml --------------------------------------------------------------------------------------------


def _selected(ctx) -> list[str]:
    from testtask.train_before_test.layout import layout, present_downstream

    lay = layout(ctx.settings.categories, ctx.settings.perplexity, ctx.settings.labels)
    own = SimpleNamespace(path="all_results.json", benchmarks=lambda: {"humaneval", "mbpp", "arxiv_2025"})
    return present_downstream(own, lay)[0]


@pytest.mark.parametrize("mode", ["add", "replace"])
def test_own_benchmarks_are_selected(tmp_path, mode):
    from testtask.pipeline import make_context

    user = tmp_path / "user"
    code = {"name": "Code", "benchmarks": ["humaneval", "mbpp"]}
    write(user, "benchmarks.yaml", {"mode": mode, "categories": {"Code": code}, "labels": {"mbpp": "MBPP"}})
    ctx = make_context(analysis_config(tmp_path, user), "train-before-test")
    assert _selected(ctx) == ["humaneval", "mbpp"]
    assert ctx.settings.labels["mbpp"] == "MBPP"
    assert ("LU" in ctx.settings.categories) == (mode == "add")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"categories": {"Code": {"benchmarks": "humaneval"}}},
            "categories.Code.benchmarks: expected a non-empty list",
        ),
        (
            {"categories": {"Code": {"benches": ["humaneval"]}}},
            r"categories.Code.benchmarks: missing \(required\)",
        ),
        (
            {"categories": {"Code": {"benchmarks": ["mnli"]}}},
            r"categories.Code.benchmarks: \['mnli'\] already in",
        ),
        ({"mode": "merge", "categories": {}}, "mode: expected one of add, replace, got 'merge'"),
    ],
)
def test_a_bad_benchmarks_field_names_the_file_and_the_field(tmp_path, data, message):
    user = tmp_path / "user"
    write(user, "benchmarks.yaml", data)
    with pytest.raises(UserFileError, match=r"user/benchmarks\.yaml: " + message):
        analysis_config(tmp_path, user)


# --- claims/<paper>.yaml ----------------------------------------------------------------------------------------


def own_claim(**change: object) -> dict:
    claim = {
        "id": "own.topics.boost",
        "where": "our own run",
        "statement": "mean boost on my topics (%)",
        "paper": 1.5,
        "ours": {"output": "figure-own", "path": "boost", "scale": 100},
        "rule": {"kind": "round", "digits": 1},
    }
    return {"paper": "pretrain-on-test", "source": "published", "claims": [{**claim, **change}]}


def test_own_claim_is_evaluated_beside_the_papers(tmp_path):
    from testtask.pipeline import run

    user = tmp_path / "user"
    write(user, "claims/pretrain-on-test.yaml", own_claim())
    figures = (
        tmp_path / "figures" / "pretrain-on-test" / "published"
    )  # paths.output_dir of the published source
    figures.mkdir(parents=True)
    (figures / "figure-own.json").write_text(json.dumps({"boost": 0.0149}))
    cfg = analysis_config(tmp_path, user, "action=report", f"report.out_dir={tmp_path / 'report'}")
    claims = run(cfg)["papers"]["pretrain-on-test"]["claims"]
    ours = [c for c in claims if c["id"] == "own.topics.boost"]
    assert len(ours) == 1 and ours[0]["status"] == "matches"
    assert len(claims) > 1  # the paper's claims are still there


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"paper": "about 1.5"}, "field 'paper': rule round: the paper's value must be a number"),
        ({"rule": {"kind": "round"}}, "field 'rule'"),
        ({"colour": "red"}, "field 'colour'"),
        ({"id": "pot.table1a.bert.n50.boost"}, "field 'id': the paper's ledger"),
    ],
)
def test_a_bad_claim_field_names_the_file_and_the_field(tmp_path, change, message):
    from testtask.report.ledger import LedgerError
    from testtask.report.main import load_ledger, own_claims

    user = tmp_path / "user"
    write(user, "claims/pretrain-on-test.yaml", own_claim(**change))
    with pytest.raises(
        LedgerError, match=r"user/claims/pretrain-on-test\.yaml: claim [a-z0-9.]+, " + message
    ):
        own_claims("pretrain-on-test", load_ledger("pretrain-on-test"), user)


def test_no_user_folder_changes_nothing(tmp_path):
    from testtask.pipeline import make_context

    ctx = make_context(analysis_config(tmp_path, tmp_path / "absent"), "train-before-test")
    assert list(ctx.settings.categories) == ["LU", "CR", "QA", "PBC", "Math", "Med"]


def test_the_shipped_examples_are_valid_user_files(tmp_path):
    """conf/user/*.example.yaml, copied under their real names, load through every kind's checks."""
    import shutil

    from testtask.paths import conf_dir
    from testtask.pipeline import make_context
    from testtask.pretrain_on_test.runner.datasets import user_specs
    from testtask.report.main import load_ledger, own_claims
    from testtask.user_files import read

    user = tmp_path / "user"
    for example in (conf_dir() / "user").rglob("*.example.yaml"):
        target = user / example.relative_to(conf_dir() / "user").with_name(
            example.name.replace(".example", "")
        )
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(example, target)
    cfg = analysis_config(tmp_path, user)
    assert "student-model-7b" in make_context(cfg, "training-on-the-test-task").settings.release.registry
    assert "Code" in make_context(cfg, "train-before-test").settings.categories
    assert user_specs(read(user, "datasets.yaml"))["mytopics"]["path"] == str(user / "data" / "mytopics.csv")
    own = own_claims("pretrain-on-test", load_ledger("pretrain-on-test"), user)
    assert own.claims[-1].id == "own.figure3.boost_m50_n50_positive" and own.source == "published"
    family = make_context(cfg, "downstream-predictability").settings.families["my-135m"]
    assert family.model == "my-135m" and [m.name for m in family.members] == ["base", "fine-tuned"]


def test_own_families_join_the_configured_ones_and_a_bad_field_names_the_file(tmp_path):
    from testtask.pipeline import compose, typed, variant

    user = tmp_path / "user"
    family = {
        "label": "Mine",
        "paper": "training-on-the-test-task",
        "samples_dir": "samples",
        "model": "mine",
        "members": [
            {"name": "a", "samples": "base", "compute": 1e20},
            {"name": "b", "samples": "e1", "compute": 2e20},
        ],
    }
    write(user, "families.yaml", {"mine": family})
    config = typed(compose([f"user_dir={user}"]))
    assert set(config.downstream_predictability.families) == {"smollm2-135m-cpu-mini", "mine"}
    assert config.downstream_predictability.families["mine"].compute is None
    assert (
        variant(config, "downstream-predictability").name == "own=families"
    )  # a variant of the paper's build
    path = write(user, "families.yaml", {"mine": {**family, "members": "all", "colour": "red"}})
    with pytest.raises(UserFileError) as err:
        compose([f"user_dir={user}"])
    lines = str(err.value).splitlines()
    assert all(line.startswith(f"{path}: mine.") for line in lines) and len(lines) == 2, lines
    assert any("mine.colour" in line for line in lines) and any("mine.members" in line for line in lines)
