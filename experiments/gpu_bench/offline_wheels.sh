#!/usr/bin/env bash
# Wheels for an offline GPU node whose Python (3.12, manylinux x86-64) already has torch and accelerate but not
# the rest of what `python -m testtask.preflight` and `python -m testtask.gpu_bench` import:
# downloaded (or, for sdist-only packages, built) here into .whl/ (git-ignored). bitsandbytes is slimmed to its
# CPU and CUDA 13 libraries (the node's torch is cu130): the full wheel (43 MB) would not fit a 64 MiB transfer.
# On the node: python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
# Usage: experiments/gpu_bench/offline_wheels.sh [python]   (docs/running-on-a-cluster.md, "The GPU bench")
set -euo pipefail
PY=${1:-python3}
cd "$(dirname "$0")/../.."
rm -rf .whl && mkdir -p .whl
PLATFORMS=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64
           --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64)
# the versions of constraints.txt
pin() { grep -iE "^$(echo "$1" | sed "s/[-_]/[-_]/g")==" constraints.txt | head -1; }
BINARY=(transformers peft bitsandbytes lm-eval datasets hydra-core omegaconf pydantic pydantic-core annotated-types typing-inspection evaluate dill
        multiprocess more-itertools pytablewriter dataproperty mbstrdecoder pathvalidate tabledata tcolorpy typepy
        chardet nltk hjson)
SOURCE=(antlr4-python3-runtime sqlitedict word2number rouge-score deepspeed)
specs() { for name in "$@"; do spec=$(pin "$name"); echo "${spec:-$name}"; done; }
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp "${PLATFORMS[@]}" \
    -d .whl $(specs "${BINARY[@]}")
"$PY" -m pip wheel -q --no-deps -w .whl $(specs "${SOURCE[@]}")
"$PY" - <<'PY'
import pathlib, zipfile
wheel = next(pathlib.Path(".whl").glob("bitsandbytes-*.whl"))
keep = lambda name: not (name.startswith("bitsandbytes/libbitsandbytes_") and not (
    name.endswith("_cpu.so") or "_cuda13" in name))
slim = wheel.with_suffix(".slim")
with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(slim, "w", zipfile.ZIP_DEFLATED) as dst:
    for item in src.infolist():
        if not keep(item.filename):
            continue
        data = src.read(item)
        if item.filename.endswith(".dist-info/RECORD"):
            data = "".join(l for l in data.decode().splitlines(True) if keep(l.split(",")[0])).encode()
        dst.writestr(item, data)
slim.replace(wheel)
PY
du -ch .whl/* | tail -1
