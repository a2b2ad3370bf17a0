"""The model registry of training-on-the-test-task: shipped content, coverage of the result files, validation."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from tests.conftest import mirror_dir
from tests.training_on_the_test_task.conftest import REMOTE_CODE
from testtask.lm.models import ModelRegistry, UnknownModel, default_path

EVALUATIONS = Path("training_on_the_test_task") / "evaluations"


@pytest.fixture(scope="module")
def registry() -> ModelRegistry:
    return ModelRegistry.load()


@pytest.fixture
def config() -> dict:
    """A small valid registry to break one field at a time."""
    return {
        "base": {
            "tiny": {
                "paper_name": "tiny",
                "train_date": "2023-01",
                "params_b": 1,
                "tokens_t": 0.5,
                "hf_repo": "org/tiny",
                "family": "tiny",
                "language": "EN",
            }
        },
        "instruct": {
            "tiny-chat": {
                "train_date": "2023-02",
                "base_model": "tiny",
                "hf_repo": "org/tiny-chat",
                "family": "tiny",
                "language": "EN",
            }
        },
        "extra": {},
    }


def test_shipped_counts(registry: ModelRegistry) -> None:
    assert len(registry.names("base")) == 56
    # Appendix B.1.1 lists 35 rows although Appendix G's text says "36 instruct and chat models".
    assert len(registry.names("instruct")) == 35
    assert set(registry.names("extra")) == {"gpt-neo-1.3b", "gpt-neo-2.7b"}


def test_default_path_is_shipped_file() -> None:
    assert default_path().is_file()
    assert ModelRegistry.load(default_path()).names() == ModelRegistry.load().names()


def test_compute_and_cutoff(registry: ModelRegistry) -> None:
    assert registry.get("llama-2-7b").compute == pytest.approx(6 * 7e9 * 2e12)
    assert not registry.get("pythia-70m").is_newer("2023-11")
    assert registry.get("yi-6b").train_date == "2023-11"
    assert registry.get("yi-6b").is_newer("2023-11")  # the cutoff month counts as newer


def test_instruct_inherits_compute(registry: ModelRegistry) -> None:
    for name in registry.names("instruct"):
        info = registry.get(name)
        base = registry.get(info.base_model)
        assert (info.params_b, info.tokens_t, info.compute) == (base.params_b, base.tokens_t, base.compute)
    assert registry.get("vicuna-13b-v1.3").compute == registry.get("llama-13b").compute


def test_paper_facts(registry: ModelRegistry) -> None:
    stablelm = registry.get("stablelm-2-1.6b")
    assert registry.note("stablelm-2-1.6b", "paper_name") == "stabilitylm-2-1.6b"
    assert stablelm.hf_repo == "stabilityai/stablelm-2-1_6b"
    assert registry.get("llama-65b").hf_repo is None
    assert registry.get("baichuan-7b").hf_repo == "baichuan-inc/Baichuan-7B"
    assert {
        registry.get(m).language for m in ("baichuan-7b", "internlm-7b", "skywork-13b", "qwen-1.5-7b")
    } == {"EN+CN"}
    assert {registry.get(m).language for m in ("gemma-7b", "llama-3-8b", "stablelm-2-12b", "falcon-11b")} == {
        "EN"
    }


def test_frame(registry: ModelRegistry) -> None:
    frame = registry.frame()
    assert len(frame) == len(registry.names())
    assert {"name", "kind", "family", "language", "compute", "log10_compute", "paper_hf_repo"} <= set(frame)
    row = frame.set_index("name").loc["llama-2-7b"]
    assert row["log10_compute"] == pytest.approx(22.924, abs=1e-3)


def test_authors_values(registry: ModelRegistry) -> None:
    authors = registry.with_authors_values()
    assert authors.get("gemma-2b").tokens_t == 2.0 and registry.get("gemma-2b").tokens_t == 3.0
    assert authors.get("gemma-2b-instruct").tokens_t == 2.0
    assert authors.get("pythia-70m").train_date == "2023-02"


def test_result_files_are_known(registry: ModelRegistry) -> None:
    mirror = mirror_dir()
    root = None if mirror is None else mirror / EVALUATIONS
    if root is None or not root.is_dir():
        pytest.skip("the training_on_the_test_task mirror is not available")
    names: dict[str, Path] = {}
    for path in root.rglob("*.json"):
        rel = path.relative_to(root)
        if rel.parts[0] == "intermediate":  # intermediate/<task>/evals/<model>/step_<k>/<benchmark>.json
            names.setdefault(rel.parts[3], path)
        else:  # <stage>[/<task>]/<model>-<benchmark>.json; a benchmark never contains '-'
            names.setdefault(path.stem.rsplit("-", 1)[0], path)
    assert len(names) >= 55
    unknown = {name: str(path) for name, path in names.items() if name not in registry}
    assert not unknown


def test_from_dictconfig(config: dict) -> None:
    reg = ModelRegistry.from_config(OmegaConf.create(config))
    assert reg.names() == ["tiny", "tiny-chat"]
    assert reg.names("instruct") == ["tiny-chat"]


@pytest.mark.parametrize("date", ["2023-13", "2023-1", "23-01", 202301, "2023/01"])
def test_bad_date(config: dict, date: object) -> None:
    config["base"]["tiny"]["train_date"] = date
    with pytest.raises(ValueError, match="tiny.*train_date"):
        ModelRegistry.from_config(config)


@pytest.mark.parametrize("field", ["family", "tokens_t", "language", "hf_repo"])
def test_missing_field(config: dict, field: str) -> None:
    del config["base"]["tiny"][field]
    with pytest.raises(ValueError, match=f"tiny.*{field}"):
        ModelRegistry.from_config(config)


def test_unknown_base_model(config: dict) -> None:
    config["instruct"]["tiny-chat"]["base_model"] = "huge"
    with pytest.raises(ValueError, match="tiny-chat.*huge"):
        ModelRegistry.from_config(config)


@pytest.mark.parametrize(("field", "value"), [("params_b", 0), ("tokens_t", -1.0), ("language", "CN")])
def test_bad_values(config: dict, field: str, value: object) -> None:
    config["base"]["tiny"][field] = value
    with pytest.raises(ValueError, match=f"tiny.*{field}"):
        ModelRegistry.from_config(config)


def test_duplicate_across_sections(config: dict) -> None:
    config["extra"]["tiny"] = copy.deepcopy(config["base"]["tiny"]) | {"source": "x"}
    with pytest.raises(ValueError, match="tiny"):
        ModelRegistry.from_config(config)


def test_unknown_model(registry: ModelRegistry) -> None:
    with pytest.raises(UnknownModel) as err:
        registry.get("nope", source="x.json")
    assert "nope" in str(err.value) and "x.json" in str(err.value)
    assert isinstance(err.value, KeyError)
    assert "nope" not in registry


# ---------------------------------------------------------------------------------------------------- loading fields


def test_remote_code_is_off_unless_the_entry_says_so(registry: ModelRegistry) -> None:
    assert {n for n in registry.names() if registry.get(n).trust_remote_code} == REMOTE_CODE
    assert (
        not registry.get("falcon-7b").trust_remote_code and not registry.get("pythia-70m").trust_remote_code
    )
    assert registry.get("llama-2-70b").eval_model_args == {"parallelize": True}  # as the authors evaluated it
    assert registry.get("pythia-70m").load_kwargs() == {}  # nothing pinned: nothing passed


def test_every_base_model_is_pinned_or_says_why_not(registry: ModelRegistry) -> None:
    for name in registry.names("base"):
        info = registry.get(name)
        assert info.revision or registry.note(name, "revision_note"), name
    frame = registry.frame()
    assert {"trust_remote_code", "revision", "revision_note"} <= set(frame)


def test_loading_fields_are_validated(config: dict) -> None:
    tiny = config["base"]["tiny"]
    reg = ModelRegistry.from_config(
        config | {"base": {"tiny": tiny | {"revision": "abc1234", "model_args": {"dtype": "bfloat16"}}}}
    )
    assert reg.get("tiny").load_kwargs() == {"revision": "abc1234", "dtype": "bfloat16"}
    for field, value, message in [
        ("revision", "main", "revision = 'main': expected a commit hash or null (a branch is not a pin"),
        ("trust_remote_code", "yes", "trust_remote_code = 'yes': expected true or false"),
        ("model_args", ["dtype"], "model_args = ['dtype']: expected a mapping of keyword arguments"),
        (
            "model_args",
            {"trust_remote_code": True},
            "without trust_remote_code (set it as the entry's own field)",
        ),
    ]:
        broken = config | {"base": {"tiny": tiny | {field: value}}}
        with pytest.raises(ValueError, match=re.escape(f"invalid config: models.base.tiny.{field}")) as err:
            ModelRegistry.from_config(broken)
        assert message in str(err.value)
