"""`python analysis/qlora_bf16_vs_fp32.py`: one QLoRA pretraining step (SmolLM2-135M, 8 SMS prompts, batch 8) alternately in bf16 and fp32 autocast, same
process and load: seconds, loss and the precision the Trainer ran."""

import dataclasses

from hydra import compose, initialize_config_dir

from testtask.paths import conf_dir
from testtask.pretrain_on_test.runner.datasets import load_dataset
from testtask.pretrain_on_test.runner.zeroshot import ZeroShot
from testtask.runners import settings_of

with initialize_config_dir(config_dir=str(conf_dir()), version_base=None):
    cfg = compose(
        "pretrain_on_test_run",
        overrides=["experiment=pretrain_on_test/packing_speed", "show_step_progress=false"],
    )
settings = settings_of("pretrain-on-test", cfg)
lm = settings.lm_for_task()
data = load_dataset(settings.spec, settings.assets_dir)
texts = list(data["text"].iloc[:8])
protocol = ZeroShot(lm, settings.spec, device="cpu", show_progress=False)
for precision in ("bf16", "fp32", "bf16", "fp32"):
    protocol.lm = dataclasses.replace(lm, pretrain=dataclasses.replace(lm.pretrain, precision=precision))
    model, stats = protocol.pretrain(texts, 0)
    protocol.drop_adapters(model)
    print(
        f"asked {precision}: ran {stats.precision}, {stats.seconds:.1f} s, loss {stats.loss:.7f}, {stats.tokens} tokens",
        flush=True,
    )
