#!/bin/bash
# Whether two builds train the same bits: the demo CNN on 2560 images for 2
# epochs, in one process and on 2 ranks, and on 10240 images stopped by
# SIGTERM after 2 s then resumed, with each build; then `diff` of each
# pair's fingerprints in one store.
#   OLD="env LD_LIBRARY_PATH=/tmp/old/src /tmp/old/bin/trainscope" bench/bit_identity.sh
# (NEW defaults to build/bin/trainscope; run from the repository's root.)
set -e
OLD=${OLD:?set OLD to the trainscope command of the other build}
NEW=${NEW:-build/bin/trainscope}
mkdir -p /tmp/fp && rm -f /tmp/fp/*.db*
SET="--set data.train_subset=2560 --set data.test_subset=500 --set train.epochs=2 --set fingerprint.every_steps=5 --no-progress"
for who in OLD NEW; do
  T=${!who}
  $T -q --store sqlite:/tmp/fp/$who.db train configs/demo.yaml $SET --name one-$who
  $T -q --store sqlite:/tmp/fp/$who.db train configs/demo.yaml $SET --nproc 2 --name two-$who
  # Stopped mid-run (its checkpoint at the step it stopped), then resumed.
  RES="$SET --set data.train_subset=10240"
  $T -q --store sqlite:/tmp/fp/$who.db train configs/demo.yaml $RES --name res-$who & P=$!
  sleep 2; kill -TERM $P; wait $P || true
  if $T --store sqlite:/tmp/fp/$who.db runs list | grep res-$who | grep -q stopped; then
    $T -q --store sqlite:/tmp/fp/$who.db train configs/demo.yaml $RES --resume res-$who
  else
    echo "res-$who: finished before the signal, so not resumed (kill it sooner)"
  fi
done
$NEW -q store copy sqlite:/tmp/fp/OLD.db sqlite:/tmp/fp/MIX.db
$NEW -q store copy sqlite:/tmp/fp/NEW.db sqlite:/tmp/fp/MIX.db
for name in one two res; do
  for who in OLD NEW; do
    echo "$name-$who: loss series md5 $($NEW --store sqlite:/tmp/fp/MIX.db metrics $name-$who train/loss --format csv | cut -d, -f1,3 | md5sum | cut -c1-12); final accuracy $($NEW --store sqlite:/tmp/fp/MIX.db metrics $name-$who test/accuracy --format csv | tail -1 | cut -d, -f1,3)"
  done
  $NEW --store sqlite:/tmp/fp/MIX.db diff $name-OLD $name-NEW --no-replay 2>&1 | grep -E 'fingerprints|metric curves|final test'
done
