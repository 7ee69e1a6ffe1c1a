#!/bin/bash
# Recorded grid cells on a lent GPU machine (16 cores, one GPU, no MLflow, no network), brought
# back as MLflow stores for `bench export`.
#
#   EXPERIMENT=privacy-utility METHOD=dp-merf DATASET=census CELLS="1:1 1:2 3:0" \
#     PARALLEL=4 STAGGER_S=50 DEADLINE_S=540 bash benchmarks/lease_cells.sh
#
# Each cell (ε:seed) runs in a store of its own (/tmp/st/e<ε>-s<seed>/store.db, its artifacts
# beside it): `bench run` (the preset's evaluators), then `bench evaluate --evaluators
# privacy,fidelity`; PARALLEL cells at a time, none started after DEADLINE_S − RUN_S (default
# 360 s: a census DP-MERF cell's `bench run` took 335–357 s on an H200, an ≈ 85 s fit beside other
# fits and ≈ 4 min of one-thread downstream scoring), all stopped at DEADLINE_S (SIGTERM). Brought back in $OUT: stores.tgz (the stores and every artifact
# but the samples) and, for at most 6 runs that finished but were not scored there, <cell>.npz
# (their synthetic.npz, ≈ 2.5 MB for census) to score on the development machine. STAGGER_S: the
# k-th cell (from 0) starts no earlier than k × STAGGER_S s after the script, so that GPU-bound fits
# run one after another and cells finish one by one, not all at the deadline together (fits started
# at once share the GPU and end together: the first lease's 24 all missed it).
#
# The lease's .git is the checkout's AS THE SESSION BEGAN (third lease: HEAD there was the commit
# the session started from, not the one made before its first device call), and a run names that
# commit: a commit made during the session never reaches it, and any change to a tracked file
# outside results/ — this script's too — makes every record `-dirty`. So the script refuses to run
# unless the tree there is clean: carry the session's commits as a bundle (.lease/, below), or run
# it from a session that changed no tracked file before the call. Before the call: put the wheels MLflow's client needs into .whlml/
# (benchmarks/lease_wheels.sh) and the dataset's files into .gpudata/<dataset>/ (both
# git-excluded); move results/runs and results/REPORT.html aside (the tree that travels is ≤ 64 MiB;
# results/ does not make the tree dirty) and carry .whlml and .gpudata. Back here: `tar xzf
# stores.tgz -C /tmp/st`, then per store `MLFLOW_TRACKING_URI=sqlite:////tmp/st/<cell>/store.db
# python -m bench export --experiment E --out DIR` (the artifact paths in the stores are
# /tmp/st/...; put a brought-back <cell>.npz where its store's artifact path says before `bench
# evaluate`).
#
# A preset's cells: PRESET=dphp-table1 SCORE_AFTER= (its experiment, protocol, settings and evaluators;
# EXPERIMENT and EVALUATORS are then not used; a run `bench run` finished is scored, its sample stays) narrowed by METHOD, DATASET and each cell's ε and seed. A cell
# may name its own method, METHOD/ε:seed (CELLS="dp-hp/0.3:0 dp-merf/0.1:1"); its store is then
# /tmp/st/<method>-e<ε>-s<seed>.
#
# Fits only (image setups: one fit per setup, scored here): EVALUATORS=none SCORE_AFTER= — the runs
# are fitted and their samples stored; back here `bench evaluate` (or the preset's `bench run`)
# scores them. Samples come back xz-compressed (<cell>.npz.xz, split into ≤ 15 MiB parts
# <cell>.npz.xz.partNN when larger), at most 7 files beside stores.tgz, ≤ 60 MiB in all, in the
# order of CELLS.
#
# A commit made during the session: put `git bundle create .lease/head.bundle <session start>..HEAD`
# and `git rev-parse HEAD > .lease/HEAD` into .lease/ (git-excluded) and carry it; the script
# fetches the bundle and moves the lease's HEAD (and index) to that commit before the clean-tree
# check, so the runs name the commit whose tree they ran.
set -u
: "${METHOD:?}" "${DATASET:?}" "${CELLS:?}"; PRESET=${PRESET:-}; [ -n "$PRESET" ] || : "${EXPERIMENT:?}"
EVALUATORS=${EVALUATORS:-}; SCORE_AFTER=${SCORE_AFTER-privacy,fidelity}; PROFILE=${PROFILE:-}  # PROFILE=smoke: a try-out
if [ -s .lease/head.bundle ] && [ -s .lease/HEAD ]; then
  git fetch -q .lease/head.bundle "$(cat .lease/HEAD)" && git reset -q --mixed "$(cat .lease/HEAD)" \
    || { echo "error: could not move HEAD to $(cat .lease/HEAD) from .lease/head.bundle"; exit 2; }
fi
PARALLEL=${PARALLEL:-4}; STAGGER_S=${STAGGER_S:-0}; RUN_S=${RUN_S:-360}; DEADLINE_S=${DEADLINE_S:-540}; START=$(date +%s); END=$((START + DEADLINE_S))
REPO=$PWD; OUT=${OUT:-/tmp/lease-out}; mkdir -p "$OUT" /tmp/st
if ! python3 -c "import mlflow" 2>/dev/null; then  # the lease: no MLflow there
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whlml/*.whl >/dev/null 2>&1 \
    || { echo "error: installing .whlml/*.whl failed"; exit 2; }
fi
export PYTHONPATH=$REPO:/tmp/site DPBENCH_DATA_DIR=$REPO/.gpudata MPLBACKEND=Agg PYTHONWARNINGS=ignore \
  MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR=false DPBENCH_OFFLINE=1 DPBENCH_EVAL_JOBS=1 PYTHONUNBUFFERED=1
changes=$(git status --porcelain --untracked-files=no -- . ':(exclude)results' | wc -l)
echo "HEAD $(git rev-parse HEAD), code changes: $changes"
[ "$changes" -eq 0 ] || { git status --short --untracked-files=no -- . ':(exclude)results'
  echo "error: tracked files differ from HEAD here, so every record would be -dirty; run from a session that changed none"; exit 2; }
python3 -c "import mlflow, torch, bench.cli; print('cuda:', torch.cuda.is_available())" || exit 2
nvidia-cuda-mps-control -d 2>/dev/null && echo "CUDA MPS on"

cell() {  # index ε:seed
  local wait=$(( START + $1 * STAGGER_S - $(date +%s) )); [ $wait -gt 0 ] && sleep $wait; shift
  local method=$METHOD spec=$1 dir
  case $spec in */*) method=${spec%%/*}; spec=${spec#*/};; esac
  local eps=${spec%%:*} seed=${spec##*:}
  [ $(( END - $(date +%s) )) -gt "$RUN_S" ] || { echo "skip $1: too late"; return; }
  dir=/tmp/st/e$eps-s$seed; [ "$1" = "$spec" ] || dir=/tmp/st/$method-e$eps-s$seed
  mkdir -p "$dir"; cd "$dir" || return
  export MLFLOW_TRACKING_URI=sqlite:///$dir/store.db
  local grid=(--experiment "${EXPERIMENT:-}" ${EVALUATORS:+--evaluators "$EVALUATORS"} ${PROFILE:+--profile "$PROFILE"})
  [ -z "$PRESET" ] || grid=(--preset "$PRESET")
  # progress bars on: a cell stopped at the deadline leaves in run.log how far its fit got
  timeout -s TERM $(( END - $(date +%s) )) python3 -m bench run "${grid[@]}" --jobs 1 --threads 1 \
    --methods "$method" --datasets "$DATASET" --eps "$eps" --seeds "$seed" > run.log 2>&1
  local rc=$?; echo "run $1 rc=$rc at $(( $(date +%s) - START )) s"
  if [ -z "$SCORE_AFTER" ]; then  # a run with evaluators was scored by `bench run` itself
    [ "$rc" -eq 0 ] && [ "$EVALUATORS" != none ] && touch scored
    return
  fi
  [ $(( END - $(date +%s) )) -gt 0 ] || return  # `timeout 0` would mean no limit
  timeout -s TERM $(( END - $(date +%s) )) python3 -m bench evaluate --experiment "${EXPERIMENT:?}" \
    --evaluators "$SCORE_AFTER" --datasets "$DATASET" > eval.log 2>&1 && touch scored
  echo "scored $1 rc=$? at $(( $(date +%s) - START )) s"
}
export -f cell; export START END STAGGER_S RUN_S PRESET EXPERIMENT METHOD DATASET EVALUATORS SCORE_AFTER PROFILE
i=0; for c in $CELLS; do echo "$i $c"; i=$((i + 1)); done | xargs -P "$PARALLEL" -L1 bash -c 'cell "$@"' _
# each store's runs: status and seconds per phase (fit, sampling, evaluators), to size the next call
python3 - <<'PY'
import glob, sqlite3
for db in sorted(glob.glob("/tmp/st/*/store.db")):
    con = sqlite3.connect(db)
    for run_uuid, status in con.execute("select run_uuid, status from runs"):
        times = con.execute("select key, round(value) from latest_metrics where run_uuid = ? and key like 'time.%'", (run_uuid,))
        print(db.split("/")[3], status, " ".join(f"{k[5:]}={v:g}" for k, v in times))
PY
cd /tmp/st && tar czf "$OUT/stores.tgz" --exclude=synthetic.npz --exclude=synthetic_sample.csv .
# the unscored runs' samples, xz-compressed, in the order of CELLS: a file back from $OUT is at most
# 16 MiB, 8 files and 64 MiB in all (stores.tgz is one of them)
files=1; bytes=$(stat -c %s "$OUT/stores.tgz"); limit=$((60 * 1024 * 1024)); part=$((15 * 1024 * 1024))
for c in $CELLS; do
  d=e${c#*/}; d=${d%%:*}-s${c##*:}; case $c in */*) d=${c%%/*}-$d;; esac; [ -d "$d" ] && [ ! -e "$d/scored" ] || continue
  f=$(find "$d" -name synthetic.npz | head -1); [ -n "$f" ] || continue
  python3 -c "import numpy as np, sys; a = np.load(sys.argv[1]); np.savez(sys.argv[2], **{k: a[k] for k in a.files})" \
    "$f" "/tmp/$d.npz" && xz -6 -T0 -f "/tmp/$d.npz" || continue
  size=$(stat -c %s "/tmp/$d.npz.xz"); parts=$(( (size + part - 1) / part ))
  if [ $((files + parts)) -gt 8 ] || [ $((bytes + size)) -gt $limit ]; then echo "not brought back: $d ($size bytes)"; continue; fi
  if [ "$parts" -eq 1 ]; then mv "/tmp/$d.npz.xz" "$OUT/"; else split -b $part -d "/tmp/$d.npz.xz" "$OUT/$d.npz.xz.part"; fi
  files=$((files + parts)); bytes=$((bytes + size))
done
ls -la "$OUT"
