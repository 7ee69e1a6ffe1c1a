#!/bin/bash
# The image campaign of issue 55, resumable over sessions: every image preset's cells (one fit per
# setup, every table from it), niced, from a clean worktree, into one MLflow store; each finished
# run is exported to the records folder as it comes, for `git add results/runs/images` and a commit.
#
#   git worktree add /work/wt-campaign <clean commit>
#   WORKTREE=/work/wt-campaign STORE=/work/campaign/images.db RECORDS=/work/campaign/records \
#     DEADLINE=18:50 SEEDS=0-2 bash benchmarks/image_campaign.sh
#
# Order: the cheapest setups first. Fig. 3 and DP-MERF Table 3 score the fits Fig. 6 already made
# (`run` scores a fitted setup before it fits anything: ≈ 15 min a cell against ≈ 45 for a fit and
# its scoring, under load), then fit their own setups (which Fig. 6 then only scores), then Fig. 6's
# remaining fits, then DP-MEPF Tables 2/10/11 at the `cpu` profile. SEEDS (e.g. 0-2, then 3-4) takes the seeds in rounds, so that every setup reaches three
# seeds before any reaches five; without it each preset's own seeds. THREADS: torch threads per cell,
# part of each cell's key: keep the default 1 so that later rounds find the earlier seeds (cores no
# cell uses are lent to fits whose numbers do not depend on the thread count anyway). `--deadline` starts no cell
# after DEADLINE; a running one finishes (the session's end kills it: it is marked FAILED and the same command runs it again). A run is recorded only from a
# worktree whose tracked files equal its commit (the script refuses otherwise), so every record
# names its code. Runs fitted elsewhere (a GPU lease's stores) are scored where they lie, with
# `bench evaluate`, and exported the same way.
set -u
: "${WORKTREE:?}" "${STORE:?}" "${RECORDS:?}"
DEADLINE=${DEADLINE:-}; SEEDS=${SEEDS:-}; THREADS=${THREADS:-1}; PRESETS=${PRESETS:-dphp-fig3 dpmerf-table3 dphp-fig6 dpmepf-table2 dpmepf-table2-phi1}
cd "$WORKTREE" || exit 2
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  git status --short --untracked-files=no; echo "error: $WORKTREE differs from its commit; records must name clean code"; exit 2
fi
export PYTHONPATH=$WORKTREE MLFLOW_TRACKING_URI=sqlite:///$STORE MPLBACKEND=Agg DPBENCH_OFFLINE=1 \
  MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR=false DPBENCH_EVAL_JOBS=${DPBENCH_EVAL_JOBS:-2}
echo "campaign at $(git rev-parse --short HEAD) into $STORE, deadline ${DEADLINE:-none}, seeds ${SEEDS:-as each preset}"
status=0
for preset in $PRESETS; do
  nice -n 10 python -m bench run --preset "$preset" --jobs 1 --threads "$THREADS" --no-progress ${DEADLINE:+--deadline "$DEADLINE"} ${SEEDS:+--seeds "$SEEDS"}
  status=$?
  python -m bench export --experiment "$(python -c "from bench.report.presets import get_preset; print(get_preset('$preset').experiment)")" \
    --out "$RECORDS" >/dev/null || echo "export of $preset's experiment failed"
  # the sample grids live with the store's artifacts, not in the records: a report from the store
  # draws them (one per setup, its lowest seed); copy $RECORDS/report/report_files/samples_*.png
  # into results/report_files and a report from the records keeps them
  python -m bench report --experiment "$(python -c "from bench.report.presets import get_preset; print(get_preset('$preset').experiment)")" \
    --out "$RECORDS/report" >/dev/null || echo "the store's report of $preset failed"
  [ $status -eq 4 ] && { echo "deadline passed during $preset: run the same command again"; exit 4; }
done
exit $status
