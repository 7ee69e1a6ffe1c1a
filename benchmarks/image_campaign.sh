#!/bin/bash
# The image campaign of issue 55, resumable over sessions: the image presets' cells, one setup at a
# time (a setup's fit scored at once by every preset that asks for it: one fit, every table from it),
# niced, from a clean worktree, into one MLflow store; each finished setup is exported to the
# records folder as it ends, for `python benchmarks/collect_records.py` and a commit.
#
#   git worktree add --detach /work/wt-campaign <clean commit>
#   WORKTREE=/work/wt-campaign STORE=/work/campaign/images.db RECORDS=/work/campaign/records \
#     DEADLINE=18:50 SEEDS=0-2 bash benchmarks/image_campaign.sh
#   python benchmarks/collect_records.py /work/campaign/records/images results/runs/images
#
# DP-MEPF beside it, as a second campaign (its own worktree and store; two cores hold both):
#   WORKTREE=/work/wt-mepf STORE=/work/campaign/mepf.db RECORDS=/work/campaign/records-mepf DEADLINE=18:50 \
#     SEEDS=0-2 PRESETS="dpmepf-table2 dpmepf-table2-phi1" \
#     SETUPS="dp-mepf mnist 1;dp-mepf fashion-mnist 1;dp-mepf mnist 10;dp-mepf fashion-mnist 10;…" \
#     bash benchmarks/image_campaign.sh
#
# Per setup (SETUPS: "method dataset ε" items, the cheapest measured first), every preset of PRESETS
# that has cells of it runs them, narrowed with --methods/--datasets/--eps: the first fits and
# scores, the next ones score the stored sample (`run` scores a fitted setup before it fits
# anything) and reuse the classifier fits kept in the evaluation cache (effective-size's full size
# is image-downstream's fit). Setup by setup, not preset by preset: a machine's store and cache do not
# outlive a session here, so a fit whose scoring waits for a later preset may be lost and refitted.
# A store created empty is first given the committed record (`bench import`), so finished cells are
# skipped; their fits are not stored, so a preset that asks more of such a setup fits it again.
# SEEDS (e.g. 0-2, then 3-4) takes the seeds in rounds, so that every setup reaches three seeds
# before any reaches five. THREADS: torch threads per cell, part of each cell's key: keep the
# default 1 so that later rounds find the earlier seeds (cores no cell uses are lent to fits whose
# numbers do not depend on the thread count anyway). DEADLINE (a clock time, HH:MM) is fixed once, at
# the script's start — the next such time — and each run gets the time left to it as `--deadline`
# (a clock time given to every run anew would name tomorrow's once today's has passed); `--deadline` starts no cell after DEADLINE; a
# running one finishes (the session's end kills it: it is marked FAILED and the same command runs
# it again). A run is recorded only from a worktree whose tracked files equal its commit (the script
# refuses otherwise), so every record names its code.
set -u
: "${WORKTREE:?}" "${STORE:?}" "${RECORDS:?}"
DEADLINE=${DEADLINE:-}; SEEDS=${SEEDS:-}; THREADS=${THREADS:-1}
if [ -n "$DEADLINE" ]; then
  until_epoch=$(date -d "today $DEADLINE" +%s) || { echo "error: DEADLINE $DEADLINE is not a clock time HH:MM"; exit 2; }
  [ "$until_epoch" -le "$(date +%s)" ] && until_epoch=$(date -d "tomorrow $DEADLINE" +%s)
fi
left() {  # seconds from now to DEADLINE (nothing without one; 0 once it has passed)
  [ -z "$DEADLINE" ] && return
  local now; now=$(date +%s)
  echo $(( until_epoch > now ? until_epoch - now : 0 ))
}
PRESETS=${PRESETS:-dphp-fig6 dphp-fig3 dpmerf-table3 dpmepf-table2 dpmepf-table2-phi1}
# experiment:evaluator pairs rescored after each setup (the classifier pools, whose fits can time out)
RESCORE=${RESCORE:-"images:image-downstream dpmepf-table2:image-logreg-mlp dpmepf-table2-phi1:image-logreg-mlp"}
# the most table setups a core-hour first (a fit counts for every table that reads it: DP-CGAN for
# Fig. 6, Fig. 3 and Table 3, DP-GAN for Fig. 3 and Table 3, DP-MERF at ε = 0.2 for Table 3 alone),
# then the cheapest, from REPORT's measured costs of a seed (fit and scoring, 2 cores)
SETUPS=${SETUPS:-"full-mmd mnist inf;full-mmd fashion-mnist inf;dp-hp fashion-mnist 1;dp-hp fashion-mnist inf;\
dp-cgan mnist 9.6;dp-cgan fashion-mnist 9.6;dp-gan mnist 9.6;dp-gan fashion-mnist 9.6;dp-merf fashion-mnist inf;\
dp-merf fashion-mnist 1;dp-merf mnist 0.2;dp-merf fashion-mnist 0.2;real fashion-mnist inf;real mnist inf;\
dp-merf mnist 1;dp-merf mnist inf;dp-hp mnist 1;dp-hp mnist inf;dp-mepf mnist 1;dp-mepf mnist 10;dp-mepf mnist inf;\
dp-mepf mnist 0.2;dp-mepf fashion-mnist 1;dp-mepf fashion-mnist 10;dp-mepf fashion-mnist inf;dp-mepf fashion-mnist 0.2"}
cd "$WORKTREE" || exit 2
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  git status --short --untracked-files=no; echo "error: $WORKTREE differs from its commit; records must name clean code"; exit 2
fi
export PYTHONPATH=$WORKTREE MLFLOW_TRACKING_URI=sqlite:///$STORE MPLBACKEND=Agg DPBENCH_OFFLINE=1 \
  MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR=false DPBENCH_EVAL_JOBS=${DPBENCH_EVAL_JOBS:-2}
echo "campaign at $(git rev-parse --short HEAD) into $STORE, deadline ${DEADLINE:-none}, seeds ${SEEDS:-as each preset}"
EXPERIMENTS=$(for preset in $PRESETS; do python -c "from bench.report.presets import get_preset; print(get_preset('$preset').experiment)"; done | sort -u)
if [ ! -f "$STORE" ]; then
  for experiment in $EXPERIMENTS; do
    [ -d "$WORKTREE/results/runs/$experiment" ] && { python -m bench import "$WORKTREE/results/runs" --experiment "$experiment" >/dev/null || echo "importing results/runs/$experiment failed"; }
  done
fi
# which presets have cells of which setup: "preset method dataset ε" lines
PLAN=$(python - "$PRESETS" <<'EOF'
import sys
from bench.harness.grid import expand
from bench.report.presets import get_preset
for name in sys.argv[1].split():
    setups = {(c.method, c.dataset, c.epsilon) for grid in get_preset(name).grids for c in expand(grid)[0]}
    for method, dataset, epsilon in sorted(setups, key=str):
        print(name, method, dataset, f"{epsilon:g}")
EOF
) || { echo "error: cannot read the presets' grids"; exit 2; }
status=0
IFS=';' read -ra setups <<< "$SETUPS"
for setup in "${setups[@]}"; do
  read -r method dataset eps <<< "$setup"
  for preset in $PRESETS; do
    grep -qx "$preset $method $dataset $eps" <<< "$PLAN" || continue
    seconds=$(left)
    if [ "$seconds" = 0 ]; then status=4; break; fi  # the deadline has passed: no run starts
    nice -n 10 python -m bench run --preset "$preset" --methods "$method" --datasets "$dataset" --eps "$eps" \
      --jobs 1 --threads "$THREADS" --no-progress ${seconds:+--deadline "${seconds}s"} ${SEEDS:+--seeds "$SEEDS"}
    status=$?
    [ $status -eq 4 ] && break
  done
  # a classifier stopped by its 1,800 s timeout (a busy machine) leaves its evaluator incomplete (tag
  # errors.<evaluator>): score it again; the other classifiers come from the evaluation cache
  for pair in $RESCORE; do
    grep -qx "${pair%%:*}" <<< "$EXPERIMENTS" || continue
    nice -n 10 python -m bench evaluate --experiment "${pair%%:*}" --evaluators "${pair#*:}" --methods "$method" \
      --datasets "$dataset"
  done
  for experiment in $EXPERIMENTS; do
    python -m bench export --experiment "$experiment" --out "$RECORDS" >/dev/null 2>&1
    # the sample grids live with the store's artifacts, not in the records: a report from the store
    # draws them (one per setup, its lowest seed); copy $RECORDS/report-<experiment>/report_files/samples_*.png
    # into results/report_files and a report from the records keeps them
    python -m bench report --experiment "$experiment" --out "$RECORDS/report-$experiment" >/dev/null 2>&1
  done
  [ $status -eq 4 ] && { echo "deadline passed during $setup: run the same command again"; exit 4; }
done
exit $status
