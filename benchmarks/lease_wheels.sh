#!/bin/bash
# The wheels benchmarks/lease_cells.sh installs on a lent GPU machine (Python 3.12, PyTorch,
# NumPy, pandas, scikit-learn there; no MLflow, no network): MLflow's client with its SQLite store
# and what this project imports beyond that image, at the versions installed here. Into .whlml/
# (git-excluded), ≈ 27 MB. `mlflow` itself is left out: its wheel adds only the UI and the model
# server to mlflow-skinny's code (12 MB).
set -eu
mkdir -p .whlml
exclude=$(git rev-parse --git-path info/exclude); mkdir -p "$(dirname "$exclude")"
grep -qsx '/.whlml/' "$exclude" || echo '/.whlml/' >> "$exclude"
pin() { python3 -c "import importlib.metadata as m; print('$1==' + m.version('$1'))"; }
specs=""
for name in mlflow-skinny mlflow-tracing alembic mako sqlalchemy cryptography cffi pycparser cachetools databricks-sdk \
    fastapi starlette sniffio importlib-metadata opentelemetry-api opentelemetry-proto opentelemetry-sdk \
    opentelemetry-semantic-conventions pydantic pydantic-core annotated-types typing-inspection sqlparse \
    autodp dm-tree dp-accounting opacus prdc pytorch-fid; do
  specs="$specs $(pin $name)"
done
specs="$specs xgboost-cpu==$(python3 -c "import importlib.metadata as m; print(m.version('xgboost'))")"  # without CUDA: 5 MB, not 300
specs="$specs orjson==3.11.7"  # fastapi imports it; not installed here
for spec in $specs; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whlml "$spec" 2>/dev/null \
    || python3 -m pip wheel -q --no-deps -w .whlml "$spec"  # pure Python, published as source only (autodp)
done
# the project's entry points (plugins are found through them): a wheel of this tree
python3 -m pip wheel -q --no-deps -w .whlml .
ls .whlml | wc -l; du -sh .whlml
