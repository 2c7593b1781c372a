#!/usr/bin/env bash
# Made tests/compat/torch113/ once, with the last build on Debian's libtorch
# 1.13 (commit 843fd27): a store holding two short trainings with every kind
# of record that build wrote (metrics, checkpoints, fingerprints, per-layer
# profile, probes and alerts, resources, predictions, the environment), and
# what that build's readers printed of them (expected/). compat_test.sh
# checks that today's build reads the same. Kept to say how the fixture was
# made; it cannot be rerun without that build.
#   tests/compat/make_torch113_fixture.sh /path/to/1.13/build/bin/trainscope
set -euo pipefail
TS=$1
here=$(cd "$(dirname "$0")" && pwd)
configs=${CONFIGS:-$here/../../configs}  # a clean checkout's, so the runs record no local diff
out=$here/torch113
rm -rf "$out"; mkdir -p "$out/expected"
cd "$out"
export TRAINSCOPE_STORE=sqlite:$out/store.db
small=(--set data.train_subset=1024 --set data.test_subset=256 --set train.epochs=1)
"$TS" -q train "$configs/demo.yaml" --name demo113 "${small[@]}" \
  --set checkpoint.every_steps=8 --set profile.enabled=true --set profile.warmup_steps=1 \
  --set profile.every=2 --set probes.preset=standard --set probes.every=2 \
  --set probes.tensorboard=false --set monitor.interval_s=0.1
"$TS" -q train "$configs/mlp.yaml" --name mlp113 "${small[@]}" --set model.hidden=32 \
  --set optimizer.name=sgd --set optimizer.momentum=0.5 --set optimizer.nesterov=true
e=$out/expected
for run in demo113 mlp113; do
  "$TS" --json runs show "$run" > "$e/runs_show_$run.json"
  "$TS" metrics "$run" train/loss --format json > "$e/metrics_loss_$run.json"
  "$TS" --json eval "$run" > "$e/eval_$run.json"
done
"$TS" runs export demo113 mlp113 --format json --out "$e/export.json"
"$TS" --json profile show demo113 > "$e/profile_demo113.json"
"$TS" --json probes demo113 > "$e/probes_demo113.json"
"$TS" --json diff demo113 demo113 > "$e/diff_self.json" || true
"$TS" --version > "$e/version.txt"
# One file per store, no write-ahead log or reserve beside it.
sqlite3 "$out/store.db" "PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode=DELETE;" > /dev/null
rm -f "$out"/store.db-*
