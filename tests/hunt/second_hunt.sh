#!/bin/bash
# The second bad-input / fault hunt of issue 29 ("Results a user can trust"):
# 217 cases across its 13 classes and every command; docs/reliability.md,
# "The second hunt", has each case's outcome before and after the fixes.
#   TS_BIN=build/bin/trainscope H=/tmp/second-hunt CLEANUP=1 bash tests/hunt/second_hunt.sh [N...]
# Needs root (it mounts small tmpfs: a read-only one, a 64 KiB one, one for a
# crashed store remounted read-only), curl, sqlite3, python3. $H is deleted
# and built again: give it a folder of its own. Not run by ctest (root).
TS_BIN=${TS_BIN:-build/bin/trainscope}
H=${H:-/tmp/second-hunt}        # scratch folder for fixtures and stores
export TS_BIN H
export DB=$H/t.db
export TS="$TS_BIN --store sqlite:$DB"
ONLY=" $* "

setup() {
  for m in $H/rofs $H/small $H/ro4; do mountpoint -q $m && umount $m; done
  rm -rf $H; mkdir -p $H/out $H/folder $H/rofs $H/small
  mount -t tmpfs -o ro,size=1m tmpfs $H/rofs 2>/dev/null || echo "note: no read-only tmpfs (not root?)"
  mount -t tmpfs -o size=64k tmpfs $H/small 2>/dev/null || echo "note: no small tmpfs"
  cat > $H/good.yaml <<'Y'
run:
  experiment: hunt
data:
  dataset: synthetic
  synthetic:
    size: 256
model:
  name: mlp
  hidden: 16
train:
  epochs: 1
  batch_size: 64
monitor:
  interval_s: 0
Y
  # a longer training (for pause/kill cases)
  (sed 's/epochs: 1/epochs: 50000/' $H/good.yaml; printf 'checkpoint:\n  every_epochs: 2000\n') > $H/long.yaml
  $TS -q train $H/good.yaml --name tr --no-progress >/dev/null
  $TS -q train $H/good.yaml --name pr --no-progress --set probes.preset=standard --set probes.every=1 >/dev/null
  $TS -q profile $H/good.yaml --steps 8 --name prof --set profile.warmup_steps=2 --set profile.every=1 >/dev/null 2>&1
  $TS -q numerics logmap --steps 50 --name lm >/dev/null
  $TS -q watch --name w1 -- sh -c 'for i in 1 2 3; do echo "trainscope: step=$i loss=0.$i"; done' >/dev/null
  # a tiny study: 2 cells x 2 replicates of the synthetic MLP
  mkdir -p $H/st
  cp $H/good.yaml $H/st/base.yaml
  cat > $H/st/study.yaml <<'Y'
study: tiny
base: base.yaml
grid:
  optimizer.lr: [0.01, 0.02]
replicates: 2
workers: 1
Y
  $TS -q study run $H/st/study.yaml --logs $H/logs >/dev/null 2>&1
}

# start_long STORE NAME: start a long training in the background; wait until it is
# running and has a checkpoint; print its pid
start_long() {
  local st=$1 name=$2
  $TS_BIN --store sqlite:$st -q train $H/long.yaml --no-progress --name $name > /dev/null 2> $st.$name.err &
  local p=$!
  for i in $(seq 100); do
    $TS_BIN --store sqlite:$st runs show $name 2>/dev/null | grep -q "checkpoints/step" && break; sleep 0.2
  done
  echo $p
}
export -f start_long

# cpdb SRC DST: a consistent copy of a store file (its WAL included), replacing DST and its -wal/-shm
cpdb() { rm -f "$2" "$2-wal" "$2-shm"; sqlite3 "$1" ".backup '$2'"; }
export -f cpdb

# c ID CLASS "description" 'command'  -- runs the command (bash -c, 60 s timeout),
# prints its exit code and the first lines of stderr and stdout.
c() {
  local id=$1 cls=$2 desc=$3 cmd=$4
  if [ "$ONLY" != "  " ] && [[ "$ONLY" != *" $id "* ]]; then return; fi
  local o=$H/out/$id
  printf '%s\n' "$cmd" > $o.cmd
  timeout 60 bash -o pipefail -c "$cmd" > $o.stdout 2> $o.stderr < /dev/null
  local rc=$?
  echo "### case $id [class $cls] $desc"
  echo "\$ $cmd"
  echo "exit=$rc"
  echo "stderr: $(head -c 600 $o.stderr | head -n 3)"
  echo "stdout: $(head -c 300 $o.stdout | head -n 2)"
  echo
}

# a store whose training was SIGKILLed (a crash), copied onto a read-only file system
setup_crash() {
  local S=$H/c4.db
  $TS_BIN --store sqlite:$S -q train $H/good.yaml --name done --no-progress > /dev/null
  local p=$(start_long $S crashed)
  sleep 2.5; kill -KILL $p; sleep 0.3
  mkdir -p $H/ro4
  mount -t tmpfs -o size=64m tmpfs $H/ro4 && cp -a $H/c4.db* $H/c4-artifacts $H/ro4/ && mount -o remount,ro $H/ro4
  (cd $H/ro4 && sha256sum c4.db* > $H/ro4.sums)
}
export RO=$H/ro4/c4.db
export TR="$TS_BIN --store sqlite:$RO"

[ -n "$SKIP_SETUP" ] || { setup; setup_crash; }

# ---------------- class 5: no value reaches libtorch unchecked ----------------
c 1 5 "optimizer.eps=0 (range is (0,1])" '$TS train $H/good.yaml --no-progress --set optimizer.eps=0'
c 2 5 "optimizer.lr=inf" '$TS train $H/good.yaml --no-progress --set optimizer.lr=inf'
c 3 5 "optimizer.lr=1e309 (overflows a double)" '$TS train $H/good.yaml --no-progress --set optimizer.lr=1e309'
c 4 5 "optimizer.lr= (empty)" '$TS train $H/good.yaml --no-progress --set optimizer.lr='
c 5 5 "schedule.gamma=nan with step schedule" '$TS train $H/good.yaml --no-progress --set schedule.name=step --set schedule.gamma=nan'
c 6 5 "model.width=1e-300 on mlp (a width that rounds to 0 units)" '$TS train $H/good.yaml --no-progress --set model.width=1e-300'
c 7 5 "model.width=1e-300 on mobilenet_v1" '$TS train $H/good.yaml --no-progress --set model.name=mobilenet_v1 --set model.width=1e-300'
c 8 5 "synthetic 8x8 images into lenet5 (kernel larger than input)" '$TS train $H/good.yaml --no-progress --set model.name=lenet5 --set data.synthetic.height=8 --set data.synthetic.width=8'
c 9 5 "synthetic 8x8 images into vgg11 (5 max-pools)" '$TS train $H/good.yaml --no-progress --set model.name=vgg11 --set data.synthetic.height=8 --set data.synthetic.width=8 --set data.synthetic.size=64 --set train.batch_size=8'
c 10 5 "synthetic 8x8 images into alexnet_mini" '$TS train $H/good.yaml --no-progress --set model.name=alexnet_mini --set data.synthetic.height=8 --set data.synthetic.width=8'
c 11 5 "seeds.master=18446744073709551616 (2^64)" '$TS train $H/good.yaml --no-progress --set seeds.master=18446744073709551616'
c 12 5 "seeds.master=-1" '$TS train $H/good.yaml --no-progress --set seeds.master=-1'
c 13 5 "model.flip_bit=9223372036854775807 (beyond the parameter count)" '$TS train $H/good.yaml --no-progress --set model.flip_bit=9223372036854775807 --name flipbig'
c 14 5 "eval.target_accuracy=nan" '$TS train $H/good.yaml --no-progress --set eval.target_accuracy=nan'
c 15 5 "compute.dtype=float16" '$TS train $H/good.yaml --no-progress --set compute.dtype=float16'
c 16 5 "train.epochs=1.5 in YAML" 'sed "s/epochs: 1/epochs: 1.5/" $H/good.yaml > $H/ep15.yaml && $TS train $H/ep15.yaml --no-progress'
c 17 5 "train.epochs: 0x1 in YAML (hex)" 'sed "s/epochs: 1/epochs: 0x1/" $H/good.yaml > $H/ephex.yaml && $TS train $H/ephex.yaml --no-progress'
c 18 5 "optimizer.lr: .inf in YAML" 'printf "optimizer:\n  lr: .inf\n" | cat $H/good.yaml - > $H/lrinf.yaml && $TS train $H/lrinf.yaml --no-progress'
c 19 5 "data.normalize: yes (YAML 1.1 boolean)" 'printf "  normalize: yes\n" > /dev/null; sed "s/  dataset: synthetic/  dataset: synthetic\n  normalize: yes/" $H/good.yaml > $H/yes.yaml && $TS train $H/yes.yaml --no-progress'
c 20 5 "optimizer.name: ~ (null)" 'printf "optimizer:\n  name: ~\n" | cat $H/good.yaml - > $H/null.yaml && $TS train $H/null.yaml --no-progress'
c 21 5 "optimizer.lr given a mapping" 'printf "optimizer:\n  lr: {a: 1}\n" | cat $H/good.yaml - > $H/lrmap.yaml && $TS train $H/lrmap.yaml --no-progress'
c 22 5 "train.epochs: (empty value)" 'sed "s/epochs: 1/epochs:/" $H/good.yaml > $H/epempty.yaml && $TS train $H/epempty.yaml --no-progress'
c 23 5 "--set with an empty key (=5)" '$TS train $H/good.yaml --no-progress --set =5'
c 24 5 "--set of a whole section (optimizer=sgd)" '$TS train $H/good.yaml --no-progress --set optimizer=sgd'
c 25 5 "--set schedule.milestones=[1,,2]" '$TS train $H/good.yaml --no-progress --set schedule.name=multistep --set "schedule.milestones=[1,,2]"'
c 26 5 "run.experiment with a newline" '$TS train $H/good.yaml --no-progress --set "run.experiment=a
b"'
c 27 5 "--name with a newline" '$TS train $H/good.yaml --no-progress --name "x
y"'
c 28 5 "--name empty" '$TS train $H/good.yaml --no-progress --name ""'
c 29 5 "probes.layers= (empty glob)" '$TS train $H/good.yaml --no-progress --set probes.preset=standard --set probes.layers='
c 30 5 "data.synthetic.classes=100000 (in range) with 256 samples, under ulimit -v 4 GB (without: OOM-killed at 24 GB RSS)" 'ulimit -v 4000000; $TS train $H/good.yaml --no-progress --set data.synthetic.classes=100000 --name manyclasses'
c 31 5 "train.batch_size=1e3 (float notation for an int)" '$TS train $H/good.yaml --no-progress --set train.batch_size=1e2'
c 32 5 "monitor.cpu_tdp_watts=inf" '$TS train $H/good.yaml --no-progress --set monitor.cpu_tdp_watts=inf'
c 33 5 "model.hidden=1048576 x model.width=64 on mlp (in range, 67M units), ulimit -v 4 GB" 'ulimit -v 4000000; $TS train $H/good.yaml --no-progress --set model.hidden=1048576 --set model.width=64'
c 34 5 "mobilenet_v1 with model.width=64 (in range), ulimit -v 4 GB" 'ulimit -v 4000000; $TS train $H/good.yaml --no-progress --set model.name=mobilenet_v1 --set model.width=64 --set data.synthetic.size=64 --set train.batch_size=8'
c 35 5 "probes.histogram_bins=10000 x activation_samples=16777216 (in range)" 'ulimit -v 4000000; $TS train $H/good.yaml --no-progress --set probes.preset=full --set probes.histogram_bins=10000 --set probes.activation_samples=16777216 --name bigprobes'
c 36 5 "data.synthetic.channels=1024 (in range) on demo_cnn, ulimit -v 4 GB" 'ulimit -v 4000000; $TS train $H/good.yaml --no-progress --set model.name=demo_cnn --set data.synthetic.channels=1024'

# ---------------- class 6: every output path ----------------
c 37 6 "resources --plot to a file, not a folder" '$TS resources tr --plot $H/good.yaml'
c 38 6 "resources --plot to a folder that does not exist" '$TS resources w1 --plot $H/nope/plots'
c 39 6 "resources --plot on a read-only file system" '$TS resources w1 --plot $H/rofs/plots'
c 40 6 "study report -o into a folder" '$TS study report tiny --format md --no-weights -o $H/folder'
c 41 6 "study report -o into a missing folder" '$TS study report tiny --format md --no-weights -o $H/nope/r.md'
c 42 6 "report STUDY -o on a read-only file system" '$TS report tiny --format md --no-weights -o $H/rofs/r.md'
c 43 6 "plot -o /dev/full (the write fails: ENOSPC)" '$TS plot w1 loss -o /dev/full'
c 44 6 "card -o /dev/full" '$TS card tr -o /dev/full'
c 45 6 "runs export to stdout when stdout is /dev/full" '$TS runs export tr > /dev/full'
c 46 6 "checklist to stdout when stdout is /dev/full" '$TS checklist tr > /dev/full'
c 47 6 "runs export -o into a 64 KiB file system (ENOSPC mid-write)" 'head -c 60000 /dev/zero > $H/small/fill; $TS runs export -o $H/small/points.csv; r=$?; ls -la $H/small >&2; rm -f $H/small/fill $H/small/points.csv; exit $r'
c 48 6 "-o with an empty path" '$TS card tr -o ""'
c 49 6 "profile show --svg into a missing folder" '$TS profile show prof --svg $H/nope/x.svg'
c 50 6 "profile show --trace /dev/full" '$TS profile show prof --trace /dev/full'
c 51 6 "costmodel eval --svg into a folder" '$TS costmodel eval --svg $H/folder'
c 52 6 "probes -o on a read-only file system" '$TS probes pr --format csv -o $H/rofs/p.csv'
c 53 6 "probes --svg /dev/full" '$TS probes pr --svg /dev/full'
c 54 6 "stats -o /dev/full" '$TS stats test/accuracy tr pr -o /dev/full'
c 55 6 "numerics logmap --out on a read-only file system" '$TS numerics logmap --steps 5 --out $H/rofs/lm'
c 56 6 "runs list > /dev/full" '$TS runs list > /dev/full'
c 57 6 "config show > /dev/full" '$TS config show $H/good.yaml > /dev/full'
c 58 6 "completion bash > /dev/full" '$TS completion bash > /dev/full'
c 59 6 "runs export > FILE on a full 64 KiB file system (shell redirect)" 'head -c 60000 /dev/zero > $H/small/fill; $TS runs export > $H/small/points.csv; r=$?; echo "bytes written: $(stat -c %s $H/small/points.csv), full export: $($TS runs export | wc -c)" >&2; rm -f $H/small/fill $H/small/points.csv; exit $r'
c 60 6 "a study's --logs folder on a read-only file system" 'cp -r $H/st $H/st60 && sed -i "s/study: tiny/study: tiny60/" $H/st60/study.yaml && $TS study run $H/st60/study.yaml --logs $H/rofs/logs; r=$?; $TS runs list --experiment tiny60 --columns name,status >&2; exit $r'

# ---------------- class 10: watch ----------------
c 61 10 "a program killed by a signal (SIGSEGV)" '$TS watch --name segv -- sh -c "echo hi; kill -SEGV \$\$"; r=$?; $TS runs list --filter "name = '"'"'segv'"'"'" --columns name,status,tags.exit_code >&2; exit $r'
c 62 10 "a program that exits 3" '$TS watch --name ex3 -- sh -c "exit 3"; r=$?; $TS runs show ex3 | grep -iE "^status|exit" >&2; exit $r'
c 63 10 "a program that forks a child keeping stdout open (sleep 90 &) and exits at once" 'start=$(date +%s); timeout 20 $TS watch --name forker -- sh -c "sleep 90 & echo \$! > $H/forker.pid; echo parent done"; r=$?; echo "took $(( $(date +%s) - start )) s (timeout 20 s)" >&2; kill $(cat $H/forker.pid); exit $r'
c 64 10 "a program that closes its stdout and stderr, then runs 1 s" '$TS watch --name closer -- sh -c "exec >&- 2>&-; sleep 1"; r=$?; $TS runs show closer | grep -E "^status" >&2; exit $r'
c 65 10 "binary output with NUL bytes is kept byte for byte" 'head -c 3000 /dev/urandom > $H/bin.dat; $TS -q watch --name binout -- cat $H/bin.dat > $H/bin.out; r=$?; cmp $H/bin.dat $H/bin.out >&2 && echo "stdout passthrough identical" >&2; $TS runs show binout | grep -iE "artifact|output" >&2; exit $r'
c 66 10 "watch --interval nan" '$TS watch --interval nan -- true'
c 67 10 "watch --carbon -1 (a negative carbon intensity)" '$TS watch --name negcarbon --carbon -1 -- sleep 1.2'
c 68 10 "watch --carbon nan" '$TS watch --name nancarbon --carbon nan -- true'
c 69 10 "a metric line with 100,000 keys" 'python3 -c "print(\"trainscope: step=1 \" + \" \".join(\"k%d=1\" % i for i in range(100000)))" > $H/wide.txt; $TS -q watch --name widekeys -- cat $H/wide.txt > /dev/null; r=$?; $TS runs show widekeys --json | grep -oE "\"metric_lines[.a-z_]*\": \"[^\"]*\"" >&2; $TS metrics widekeys 2>&1 | tail -1 >&2; exit $r'
c 70 10 "a program that ignores SIGTERM and watch gets SIGINT" '($TS watch --name stubborn -- sh -c "trap \"\" INT TERM; sleep 5" & p=$!; sleep 1.5; kill -INT $p; wait $p; r=$?; $TS runs list --filter "name = '"'"'stubborn'"'"'" --columns name,status >&2; exit $r)'
c 71 10 "a child that calls setsid and stays (daemon), stdout to /dev/null" 'start=$(date +%s); $TS watch --name daemon -- sh -c "setsid sh -c \"echo \\\$\\\$ > $H/daemon.pid; exec sleep 20\" > /dev/null 2>&1 < /dev/null & echo started"; r=$?; echo "took $(( $(date +%s) - start )) s" >&2; sleep 0.5; kill $(cat $H/daemon.pid); exit $r'
c 72 10 "a program reading stdin (cat) with no input" 'timeout 10 $TS watch --name stdin -- cat; echo "rc=$?" >&2'

# ---------------- class 3: one writer per run; live runs never reaped ----------------
# each case: a long training in its own store, paused with SIGSTOP, then the action
c 73 3 "runs delete --yes of a paused (SIGSTOP) live training" 'S=$H/c73.db; p=$(start_long $S live); kill -STOP $p; $TS_BIN --store sqlite:$S runs delete live --yes; r=$?; kill -CONT $p; kill -INT $p; while kill -0 $p 2>/dev/null; do sleep 0.2; done; $TS_BIN --store sqlite:$S runs list --columns name,status >&2; echo "the writer said:" >&2; cat $S.live.err >&2; exit $r'
c 74 3 "eval of a paused live training (does the reader-writer write into a run it does not own?)" 'S=$H/c74.db; p=$(start_long $S live); kill -STOP $p; $TS_BIN --store sqlite:$S eval live; r=$?; kill -CONT $p; kill -INT $p; while kill -0 $p 2>/dev/null; do sleep 0.2; done; exit $r'
c 75 3 "two train --resume of one killed run at the same moment (one must win, the other exit 4)" 'S=$H/c75.db; p=$(start_long $S victim); kill -KILL $p; sleep 0.3; ( $TS_BIN --store sqlite:$S -q train $H/long.yaml --resume victim --no-progress > /dev/null 2> $H/c75a.err & a=$!; $TS_BIN --store sqlite:$S -q train $H/long.yaml --resume victim --no-progress > /dev/null 2> $H/c75b.err & b=$!; sleep 3; $TS_BIN --store sqlite:$S runs list --columns name,status,host,pid >&2; kill -INT $a $b 2>/dev/null; wait $a; ra=$?; wait $b; rb=$?; echo "exits: $ra $rb" >&2; cat $H/c75a.err $H/c75b.err >&2 )'
c 76 3 "train --resume of a killed run with a different model (--set model.name=lenet5)" 'S=$H/c76.db; p=$(start_long $S victim); kill -KILL $p; sleep 0.3; $TS_BIN --store sqlite:$S train $H/long.yaml --resume victim --no-progress --set model.name=lenet5 --set train.epochs=1; r=$?; $TS_BIN --store sqlite:$S runs show victim | grep -E "^status|model.name" >&2; exit $r'
c 77 3 "train --resume of a watch run (not a training) that was killed" 'S=$H/c77.db; $TS_BIN --store sqlite:$S -q watch --name wk -- sh -c "echo \$\$ > $H/c77.pid; exec sleep 30" & w=$!; sleep 1.5; kill -KILL $w; kill $(cat $H/c77.pid); sleep 0.2; $TS_BIN --store sqlite:$S train $H/good.yaml --resume wk --no-progress'
c 78 3 "train --resume with a config of another dataset/size (resume ignores CONFIG?)" 'S=$H/c78.db; p=$(start_long $S victim); kill -KILL $p; sleep 0.3; $TS_BIN --store sqlite:$S train $H/good.yaml --resume victim --no-progress --set data.synthetic.size=512; r=$?; $TS_BIN --store sqlite:$S runs show victim | grep -E "^status|synthetic.size|train.epochs" >&2; exit $r'

# ---------------- class 4: readers never write (after a crash) ----------------
# $RO: the crashed store on a read-only tmpfs; $H/c4.db: the same store, writable.
# Each reader must work on read-only media and leave the crashed run 'running' (shown stale) in the writable one.
rw_status='sqlite3 $H/c4.db "select status from runs where name='"'"'crashed'"'"'" >&2'
c 79 4 "metrics of the crashed run, read-only media" '$TR metrics crashed train/loss --format csv | tail -n 1'
c 80 4 "resources of the crashed run, read-only media" '$TR resources crashed'
c 81 4 "card of the crashed run, read-only media" '$TR card crashed | grep -iE "status|stale|killed|running" | sed -n 1,3p'
c 82 4 "checklist of the crashed run, read-only media" '$TR checklist crashed | sed -n 1,3p'
c 83 4 "stats over all runs (one crashed), read-only media" '$TR stats train/loss --reduce min'
c 84 4 "plot of the crashed run as CSV, read-only media" '$TR plot crashed train/loss --format csv | sed -n 1,2p'
c 85 4 "env diff crashed done, read-only media" '$TR env diff crashed done | sed -n 1,3p'
c 86 4 "report throughput crashed done, read-only media" '$TR report throughput crashed done | sed -n 1,3p'
c 87 4 "diff --no-replay crashed done, read-only media" '$TR diff crashed done --no-replay | sed -n 1,3p'
c 88 4 "eval of the crashed run, read-only media (reads its checkpoint)" '$TR eval crashed'
c 89 4 "probes of the crashed run (none), read-only media" '$TR probes crashed'
c 90 4 "readers on the writable copy: card, checklist, stats, plot, env diff, eval, report throughput, then the row" '$TS_BIN --store sqlite:$H/c4.db card crashed > /dev/null; $TS_BIN --store sqlite:$H/c4.db checklist crashed > /dev/null; $TS_BIN --store sqlite:$H/c4.db stats train/loss > /dev/null; $TS_BIN --store sqlite:$H/c4.db plot crashed train/loss --format csv > /dev/null; $TS_BIN --store sqlite:$H/c4.db env diff crashed done > /dev/null; $TS_BIN --store sqlite:$H/c4.db eval crashed > /dev/null; $TS_BIN --store sqlite:$H/c4.db report throughput crashed done >/dev/null; '"$rw_status"
c 91 4 "the API on read-only media: /api/runs and /api/runs/crashed" 'P=$((20000 + RANDOM % 20000)); $TR serve --port $P > $H/s91.out 2>&1 & s=$!; for i in $(seq 100); do curl -s localhost:$P/api/info > /dev/null && break; sleep 0.1; done; curl -s "localhost:$P/api/runs" | head -c 300; echo; curl -s "localhost:$P/api/runs/crashed" | head -c 200; echo; curl -s "localhost:$P/api/runs/crashed/live" | head -c 200; kill $s; wait $s; cat $H/s91.out >&2'
c 92 4 "runs export --format json of every run, read-only media, then the writable copy's row" '$TR runs export --format json | grep -o "\"status\": \"[a-z]*\"" | sort | uniq -c; $TS_BIN --store sqlite:$H/c4.db runs export --format json > /dev/null; '"$rw_status"
c 93 4 "a stale run's duration: runs list (and the API) count to now, runs show to its last heartbeat" 'a=$($TR runs list --filter "name = '"'"'crashed'"'"'" --format csv --columns name,duration | tail -n 1); b=$($TR --json runs show crashed | grep -o "\"duration_s\": [0-9.]*"); echo "runs list: $a | runs show: $b"; $TR runs list --filter "name = '"'"'crashed'"'"' and duration > 3600" --columns name; true'

# ---------------- class 1: a study is its recorded plan ----------------
# each case works on its own copy of the tiny study (its files) and of the store
mkst() { # mkst N: a fresh store $H/sN.db holding the tiny study run from its own files in $H/sN/
  rm -rf $H/s$1 $H/s$1.db* $H/s$1-artifacts; mkdir -p $H/s$1; cp $H/st/* $H/s$1/
  $TS_BIN --store sqlite:$H/s$1.db -q study run $H/s$1/study.yaml --logs $H/s$1/logs > /dev/null 2>&1; }
export -f mkst
c 94 1 "study run whose base: file does not exist" 'mkst 94; sed -i "s/base: base.yaml/base: nobase.yaml/; s/study: tiny/study: t94/" $H/s94/study.yaml; $TS_BIN --store sqlite:$H/s94.db study run $H/s94/study.yaml --logs $H/s94/logs'
c 95 1 "study status after base.yaml became a folder" 'mkst 95; rm $H/s95/base.yaml; mkdir $H/s95/base.yaml; $TS_BIN --store sqlite:$H/s95.db study status tiny | sed -n 1,2p'
c 96 1 "study resume after study.yaml became invalid YAML" 'mkst 96; echo "grid: {" >> $H/s96/study.yaml; $TS_BIN --store sqlite:$H/s96.db study resume tiny --logs $H/s96/logs'
c 97 1 "study resume after base.yaml changed only by a comment (same values)" 'mkst 97; echo "# a comment" >> $H/s97/base.yaml; $TS_BIN --store sqlite:$H/s97.db study resume tiny --logs $H/s97/logs'
c 98 1 "study task with a name not in the plan" '$TS study task tiny optimizer.lr=0.5/r1'
c 99 1 "study task of a planned run that already finished" 'mkst 99; $TS_BIN --store sqlite:$H/s99.db study task tiny optimizer.lr=0.01/r1; r=$?; $TS_BIN --store sqlite:$H/s99.db study status tiny >&2; exit $r'
c 100 1 "study status of a run that is not a study" '$TS study status tr'
c 101 1 "study run of the same study file a second time (same study name)" 'mkst 101; $TS_BIN --store sqlite:$H/s101.db study run $H/s101/study.yaml --logs $H/s101/logs; r=$?; $TS_BIN --store sqlite:$H/s101.db study status tiny >&2; exit $r'
c 102 1 "study resume with --replan when the study name in study.yaml changed" 'mkst 102; sed -i "s/study: tiny/study: renamed/" $H/s102/study.yaml; $TS_BIN --store sqlite:$H/s102.db study resume tiny --replan --logs $H/s102/logs'
c 103 1 "study run whose base: is the study file itself" 'mkst 103; sed -i "s/base: base.yaml/base: study.yaml/; s/study: tiny/study: t103/" $H/s103/study.yaml; $TS_BIN --store sqlite:$H/s103.db study run $H/s103/study.yaml --logs $H/s103/logs'
c 104 1 "study report of a study one of whose runs was deleted" 'mkst 104; $TS_BIN --store sqlite:$H/s104.db runs delete optimizer.lr=0.01/r1 --yes > /dev/null; $TS_BIN --store sqlite:$H/s104.db study report tiny --format md --no-weights | grep -iE "runs|missing|planned" | sed -n 1,3p; $TS_BIN --store sqlite:$H/s104.db study status tiny >&2'

# ---------------- class 2: plans have a size ----------------
mkplan() { # mkplan N 'yaml lines': a study file $H/pN/study.yaml on the tiny base
  mkdir -p $H/p$1; cp $H/st/base.yaml $H/p$1/; printf "study: p$1\nbase: base.yaml\n%b\n" "$2" > $H/p$1/study.yaml; }
export -f mkplan
c 105 2 "a grid key with an empty list of values" 'mkplan 105 "grid:\n  optimizer.lr: []\nreplicates: 2"; $TS_BIN --store sqlite:$H/p105.db study run $H/p105/study.yaml --logs $H/p105/logs'
c 106 2 "--max-runs 18446744073709551616 (2^64)" 'mkplan 106 "grid:\n  optimizer.lr: [0.1]\nreplicates: 2"; $TS_BIN --store sqlite:$H/p106.db study run $H/p106/study.yaml --max-runs 18446744073709551616'
c 107 2 "replicates: -1" 'mkplan 107 "grid:\n  optimizer.lr: [0.1]\nreplicates: -1"; $TS_BIN --store sqlite:$H/p107.db study run $H/p107/study.yaml'
c 108 2 "replicates: 2.5" 'mkplan 108 "grid:\n  optimizer.lr: [0.1]\nreplicates: 2.5"; $TS_BIN --store sqlite:$H/p108.db study run $H/p108/study.yaml'
c 109 2 "a grid value given twice ([0.01, 0.01]): two cells with one name?" 'mkplan 109 "grid:\n  optimizer.lr: [0.01, 0.01]\nreplicates: 2\nworkers: 1"; $TS_BIN --store sqlite:$H/p109.db study run $H/p109/study.yaml --logs $H/p109/logs; r=$?; $TS_BIN --store sqlite:$H/p109.db study status p109 >&2; exit $r'
c 110 2 "a grid key with a scalar instead of a list" 'mkplan 110 "grid:\n  optimizer.lr: 0.1\nreplicates: 2"; $TS_BIN --store sqlite:$H/p110.db study run $H/p110/study.yaml'
c 111 2 "a grid value the config refuses (optimizer.lr: [-1])" 'mkplan 111 "grid:\n  optimizer.lr: [0.1, -1]\nreplicates: 2"; $TS_BIN --store sqlite:$H/p111.db study run $H/p111/study.yaml --logs $H/p111/logs; r=$?; $TS_BIN --store sqlite:$H/p111.db runs list --columns name,status >&2; exit $r'
c 112 2 "a grid over an unknown key (optimizer.lrr)" 'mkplan 112 "grid:\n  optimizer.lrr: [0.1, 0.2]\nreplicates: 2"; $TS_BIN --store sqlite:$H/p112.db study run $H/p112/study.yaml'
c 113 2 "study run -j 0 (outside its 1-1024 range, but 0 is its default)" 'mkplan 113 "grid:\n  optimizer.lr: [0.1]\nreplicates: 2"; $TS_BIN --store sqlite:$H/p113.db study run $H/p113/study.yaml -j 0 --logs $H/p113/logs'
c 114 2 "workers: 0 in the study file" 'mkplan 114 "grid:\n  optimizer.lr: [0.1]\nreplicates: 2\nworkers: 0"; $TS_BIN --store sqlite:$H/p114.db study run $H/p114/study.yaml --logs $H/p114/logs'
c 115 2 "threads_per_run: 100000" 'mkplan 115 "grid:\n  optimizer.lr: [0.1]\nreplicates: 2\nthreads_per_run: 100000"; $TS_BIN --store sqlite:$H/p115.db study run $H/p115/study.yaml --logs $H/p115/logs'
c 116 2 "retries: -1" 'mkplan 116 "grid:\n  optimizer.lr: [0.1]\nreplicates: 2\nretries: -1"; $TS_BIN --store sqlite:$H/p116.db study run $H/p116/study.yaml --logs $H/p116/logs'
c 117 2 "--max-runs -1 (a negative limit; 0 is refused)" 'mkplan 117 "grid:\n  optimizer.lr: [0.1]\nreplicates: 2"; $TS_BIN --store sqlite:$H/p117.db study run $H/p117/study.yaml --max-runs -1 --logs $H/p117/logs'

# ---------------- class 11: studies keep their shape ----------------
c 118 11 "store copy of a store holding a study, then study status on the copy" 'mkst 118; $TS_BIN -q store copy sqlite:$H/s118.db sqlite:$H/s118-copy.db > /dev/null; diff <($TS_BIN --store sqlite:$H/s118.db study status tiny) <($TS_BIN --store sqlite:$H/s118-copy.db study status tiny) && $TS_BIN --store sqlite:$H/s118-copy.db study report tiny --format md --no-weights | sed -n 1,1p'
c 119 11 "train --parent naming a run that does not exist" '$TS train $H/good.yaml --no-progress --parent nosuchparent'
c 120 11 "train --parent naming an ordinary run (not a study)" 'cpdb $DB $H/c120.db; $TS_BIN --store sqlite:$H/c120.db train $H/good.yaml --no-progress --parent tr --name kid; r=$?; $TS_BIN --store sqlite:$H/c120.db runs delete tr --yes >&2; exit $r'
c 121 11 "train --parent naming a study, outside its plan (a stray child)" 'mkst 121; $TS_BIN --store sqlite:$H/s121.db train $H/good.yaml --no-progress --parent tiny --name stray; r=$?; $TS_BIN --store sqlite:$H/s121.db study status tiny >&2; $TS_BIN --store sqlite:$H/s121.db stats test/accuracy --study tiny 2>&1 | sed -n 3,4p >&2; exit $r'
c 122 11 "runs delete --with-children of the study, then study resume of it" 'mkst 122; $TS_BIN --store sqlite:$H/s122.db runs delete tiny --yes --with-children >&2; $TS_BIN --store sqlite:$H/s122.db study resume tiny'
c 123 11 "runs delete --keep-children of the study, then stats --study and study status of a child name" 'mkst 123; $TS_BIN --store sqlite:$H/s123.db runs delete tiny --yes --keep-children >&2; $TS_BIN --store sqlite:$H/s123.db stats test/accuracy --study tiny'

# ---------------- class 7: references (CLI and API) ----------------
c 124 7 "runs show with an empty reference" '$TS runs show ""'
c 125 7 "runs show ____ (SQL LIKE wildcard _ as a UUID prefix)" '$TS runs show ________'
c 126 7 "runs show % (SQL LIKE wildcard)" '$TS runs show %'
c 127 7 "a full UUID in capitals" 'u=$($TS --json runs show tr | grep -o "\"uuid\": \"[^\"]*\"" | head -1 | cut -d\" -f4 | tr a-f A-F); $TS runs show $u | sed -n 1,2p'
c 128 7 "a name with a trailing space (tr )" '$TS runs show "tr "'
c 129 7 "a run name in other case (TR for run tr)" '$TS runs show TR'

# API helper: serve STORE in the background on a free port, run the curls in $2 with $U as the base URL, stop it
with_server() {
  local st=$1; shift
  local extra=$1; shift
  local P=$((20000 + RANDOM % 20000))
  $TS_BIN --store sqlite:$st serve --port $P $extra > $H/serve.$P.out 2>&1 & local s=$!
  for i in $(seq 100); do curl -s localhost:$P/api/info > /dev/null && break; sleep 0.1; done
  U=http://127.0.0.1:$P
  eval "$1"; local r=$?
  kill $s; wait $s 2>/dev/null
  return $r
}
export -f with_server
c 130 7 "API: a name sent URL-encoded (%74r for tr)" 'with_server $DB "" "curl -s -w \" HTTP %{http_code}\" \$U/api/runs/%74r/live | tail -c 120"'
c 131 7 "API: a bad percent-escape in a run reference (%ZZ)" 'with_server $DB "" "curl -s -w \" HTTP %{http_code}\" \$U/api/runs/%ZZ"'
c 132 7 "API: an artifact name with ../ (encoded) to escape the run folder" 'with_server $DB "" "curl -s -w \" HTTP %{http_code}\" \$U/api/runs/tr/artifacts/..%2F..%2F..%2F..%2Fetc%2Fpasswd | head -c 300"'
c 133 7 "API: a path with ../ to a file outside the dashboard (--path-as-is)" 'with_server $DB "" "curl -s --path-as-is -w \" HTTP %{http_code}\" \$U/../../../../etc/passwd | head -c 200"'
c 134 7 "API: a NUL byte in a run reference (%00)" 'with_server $DB "" "curl -s -w \" HTTP %{http_code}\" \$U/api/runs/tr%00x"'
c 135 13 "API: limit=99999999999999999999 and offset=-1" 'with_server $DB "" "curl -s -w \" HTTP %{http_code}\n\" \"\$U/api/runs?limit=99999999999999999999\"; curl -s -w \" HTTP %{http_code}\" \"\$U/api/runs?offset=-1\""'
c 136 12 "API: a filter nested 1,000 levels (fits in the URL)" 'python3 -c "print(\"(\"*1000 + \"name = \" + chr(39) + \"x\" + chr(39) + \"\" + \")\"*1000)" > $H/deepf.txt; with_server $DB "" "curl -s -G --data-urlencode filter@$H/deepf.txt -w \" HTTP %{http_code}\" \$U/api/runs | head -c 300"'
c 137 13 "API: a URL of 1 MB" 'head -c 1000000 /dev/zero | tr "\0" a > $H/q.txt; with_server $DB "" "curl -s -G --data-urlencode search@$H/q.txt -w \" HTTP %{http_code}\" \$U/api/runs | head -c 300"'
c 138 13 "API: a metric chart with width=0 and with key missing" 'with_server $DB "" "curl -s -w \" HTTP %{http_code}\n\" \"\$U/api/runs/w1/metric?key=loss&width=0\"; curl -s -w \" HTTP %{http_code}\" \"\$U/api/runs/w1/metric\""'
c 139 13 "API: diff without b, and diff of a run that does not exist" 'with_server $DB "" "curl -s -w \" HTTP %{http_code}\n\" \"\$U/api/diff?a=tr\"; curl -s -w \" HTTP %{http_code}\" \"\$U/api/diff?a=tr&b=nosuch\""'
c 140 13 "API: a histogram key that does not exist, and one with no slash" 'with_server $DB "" "curl -s -w \" HTTP %{http_code}\n\" \"\$U/api/runs/pr/histograms?key=no/such\"; curl -s -w \" HTTP %{http_code}\" \"\$U/api/runs/pr/histogram.svg?key=x\""'
c 141 13 "API --allow-writes: PUT a 20 MB tag value" 'cpdb $DB $H/c141.db; head -c 20000000 /dev/zero | tr "\0" a > $H/big.txt; with_server $H/c141.db --allow-writes "curl -s -X PUT --data-binary @$H/big.txt -w \" HTTP %{http_code}\" \$U/api/runs/tr/tags/big | tail -c 200"; $TS_BIN --store sqlite:$H/c141.db runs show tr | grep -c aaaa >&2'
c 142 13 "API --allow-writes: PUT a tag whose key is a NUL, holds a newline, or is a space" 'cpdb $DB $H/c142.db; with_server $H/c142.db --allow-writes "curl -s -X PUT -d v -w \" HTTP %{http_code}\n\" \$U/api/runs/tr/tags/%00; curl -s -X PUT -d v -w \" HTTP %{http_code}\n\" \$U/api/runs/tr/tags/a%0Ab; curl -s -X PUT -d v -w \" HTTP %{http_code}\" \$U/api/runs/tr/tags/%20"'
c 143 7 "API: studies/{ref} of a run that is not a study, and of an unknown one" 'with_server $DB "" "curl -s -w \" HTTP %{http_code}\n\" \$U/api/studies/tr | head -c 300; curl -s -w \" HTTP %{http_code}\" \$U/api/studies/nosuch/report.html"'

# ---------------- class 8: stores named clearly ----------------
c 144 8 "--store sqlite: with an empty path" '$TS_BIN --store sqlite: runs list'
c 145 8 "--store with a path and no scheme" 'cd $H && $TS_BIN --store $DB runs list | sed -n 1,2p'
c 146 8 "--store SQLITE: (scheme in capitals)" '$TS_BIN --store SQLITE:$DB runs list | sed -n 1,2p'
c 147 8 "--store sqlite:~/x.db (a tilde the shell did not expand)" 'cd $H && $TS_BIN --store "sqlite:~/nope-hunt.db" runs list; r=$?; ls -d $H/~ 2>&1 >&2; exit $r'
c 148 8 "store copy from a store into itself" 'cpdb $DB $H/self.db; $TS_BIN store copy sqlite:$H/self.db sqlite:$H/self.db; r=$?; $TS_BIN --store sqlite:$H/self.db runs list --all --format csv | wc -l >&2; exit $r'
c 149 8 "store copy into the same file spelled differently (./ and a symlink)" 'cpdb $DB $H/self2.db; ln -sf $H/self2.db $H/link2.db; cd $H && $TS_BIN store copy sqlite:./self2.db sqlite:$H/link2.db; r=$?; $TS_BIN --store sqlite:$H/self2.db runs list --all --format csv | wc -l >&2; exit $r'
c 150 8 "a dangling symlink as the store of a writer" 'ln -sf $H/nowhere/x.db $H/dangling.db; $TS_BIN --store sqlite:$H/dangling.db numerics logmap --steps 3 > /dev/null'
c 151 8 "a store on a read-only file system that does not exist yet (writer)" '$TS_BIN --store sqlite:$H/rofs/new.db numerics logmap --steps 3 > /dev/null'
c 152 8 "store copy into a SQLite file of another application" 'sqlite3 $H/other.db "create table customers(id integer primary key, name text); insert into customers values (1, '"'"'x'"'"');"; $TS_BIN store copy sqlite:$DB sqlite:$H/other.db; r=$?; sqlite3 $H/other.db ".tables" >&2; exit $r'
c 153 8 "--store sqlite:PATH?mode=ro (a query string)" '$TS_BIN --store "sqlite:$DB?mode=ro" runs list | sed -n 1,2p'

# ---------------- class 9: YAML oddities ----------------
c 154 9 "a config with a UTF-8 BOM" 'printf "\xef\xbb\xbf" | cat - $H/good.yaml > $H/bom.yaml; $TS config show $H/bom.yaml | grep -E "^  name: mlp|experiment"'
c 155 9 "a config with CRLF line ends (values must not keep \\r)" 'sed "s/\$/\r/" $H/good.yaml > $H/crlf.yaml; $TS train $H/crlf.yaml --no-progress --name crlf > /dev/null; r=$?; $TS runs show crlf --json | grep -E "\"run.experiment|\"model.name" | cat -A >&2; exit $r'
c 156 9 "a tab used for indentation" 'sed "s/^  name: mlp/\tname: mlp/" $H/good.yaml > $H/tab.yaml; $TS train $H/tab.yaml --no-progress'
c 157 9 "a !!binary tag on a value" 'sed "s/name: mlp/name: !!binary bWxw/" $H/good.yaml > $H/bin.yaml; $TS train $H/bin.yaml --no-progress --name binary; r=$?; $TS runs show binary --json 2>/dev/null | grep "\"model.name" >&2; exit $r'
c 158 9 "a !!str tag on an integer (epochs: !!str 1)" 'sed "s/epochs: 1/epochs: !!str 1/" $H/good.yaml > $H/str.yaml; $TS train $H/str.yaml --no-progress > /dev/null'
c 159 9 "a custom tag (!python/object) on a section" 'sed "s/^model:/model: !python\/object:os.system/" $H/good.yaml > $H/pytag.yaml; $TS train $H/pytag.yaml --no-progress'
c 160 9 "a YAML merge key (<<:) in a section" 'printf "optimizer:\n  <<: {name: sgd, lr: 0.1}\n" | cat $H/good.yaml - > $H/merge.yaml; $TS train $H/merge.yaml --no-progress'
c 161 9 "an anchor and alias for one value (valid YAML)" 'printf "optimizer:\n  lr: &l 0.01\n  weight_decay: *l\n" | cat $H/good.yaml - > $H/alias.yaml; $TS config show $H/alias.yaml | grep -E "  lr:|weight_decay"'
c 162 9 "a key of 100,000 characters" 'python3 -c "print(\"k\"*100000 + \": 1\")" | cat $H/good.yaml - > $H/longkey.yaml; $TS train $H/longkey.yaml --no-progress 2>&1 | wc -c >&2; $TS train $H/longkey.yaml --no-progress 2>&1 | cut -c 1-200 >&2; exit 0'
c 163 9 "a unicode look-alike key (Cyrillic о in optimizer)" 'printf "\xd0\xbeptimizer:\n  lr: 0.1\n" | cat $H/good.yaml - > $H/cyr.yaml; $TS train $H/cyr.yaml --no-progress'
c 164 9 "a config in UTF-16" 'iconv -f UTF-8 -t UTF-16 $H/good.yaml > $H/u16.yaml; $TS train $H/u16.yaml --no-progress'
c 165 9 "a NUL byte inside a value" 'sed "s/name: mlp/name: ml\x00p/" $H/good.yaml > $H/nul.yaml; $TS train $H/nul.yaml --no-progress'
c 166 9 "a config that is only comments" 'printf "# nothing\n" > $H/comments.yaml; $TS config show $H/comments.yaml | sed -n 1,2p'
c 167 9 "a config whose top level is a list" 'printf -- "- a\n- b\n" > $H/list.yaml; $TS train $H/list.yaml --no-progress'
c 168 9 "a study file with CRLF and a BOM" 'mkdir -p $H/s168; cp $H/st/base.yaml $H/s168/; (printf "\xef\xbb\xbf"; sed "s/\$/\r/; s/study: tiny/study: t168/" $H/st/study.yaml) > $H/s168/study.yaml; $TS_BIN --store sqlite:$H/s168.db study run $H/s168/study.yaml --logs $H/s168/logs > /dev/null; r=$?; $TS_BIN --store sqlite:$H/s168.db runs list --columns name,experiment | cat -A | sed -n 1,3p >&2; exit $r'
c 169 9 "a study file with a complex key (? [a, b])" 'mkplan 169 "? [a, b]\n: 1\ngrid:\n  optimizer.lr: [0.1]\nreplicates: 2"; $TS_BIN --store sqlite:$H/p169.db study run $H/p169/study.yaml'

# ---------------- class 12: bounded recursion ----------------
c 170 12 "--set milestones nested 60,000 levels" 'v=$(python3 -c "print(\"[\"*60000 + \"]\"*60000)"); $TS train $H/good.yaml --no-progress --set "schedule.milestones=$v" 2>&1 | cut -c 1-300 >&2; exit ${PIPESTATUS[0]}'
c 171 12 "a study file whose aliases multiply to 2^40 values" 'mkdir -p $H/p171; cp $H/st/base.yaml $H/p171/; python3 -c "
lines=[\"study: p171\",\"base: base.yaml\",\"replicates: 2\",\"a0: &a0 [x, x, x, x]\"]
for i in range(1,20): lines.append(\"a%d: &a%d [*a%d, *a%d, *a%d, *a%d]\" % (i,i,i-1,i-1,i-1,i-1))
print(chr(10).join(lines))" > $H/p171/study.yaml; $TS_BIN --store sqlite:$H/p171.db study run $H/p171/study.yaml'
c 172 12 "a profile grid file nested 100,000 levels" 'python3 -c "print(\"models: \" + \"[\"*100000 + \"]\"*100000)" > $H/deepgrid.yaml; $TS profile grid $H/deepgrid.yaml'
c 173 12 "runs list --sort with 20,000 fields" 's=$(python3 -c "print(\",\".join([\"name\"]*20000))"); $TS runs list --sort "$s" | sed -n 1,2p'
c 174 12 "runs list --columns with 9,000 columns" 's=$(python3 -c "print(\",\".join([\"metrics.k%d\" % i for i in range(9000)]))"); $TS runs list --columns "$s" 2>&1 | wc -c >&2; exit ${PIPESTATUS[0]}'
c 175 12 "a study set: value nested 100,000 levels in brackets" 'mkdir -p $H/p175; cp $H/st/base.yaml $H/p175/; python3 -c "print(\"study: p175\nbase: base.yaml\nreplicates: 2\nset:\n  schedule.milestones: \" + \"[\"*100000 + \"]\"*100000)" > $H/p175/study.yaml; $TS_BIN --store sqlite:$H/p175.db study run $H/p175/study.yaml'
c 176 12 "a profile grid file with an alias bomb" 'python3 -c "
lines=[\"a0: &a0 [x, x, x, x]\"]
for i in range(1,20): lines.append(\"a%d: &a%d [*a%d, *a%d, *a%d, *a%d]\" % (i,i,i-1,i-1,i-1,i-1))
print(chr(10).join(lines))" > $H/bombgrid.yaml; $TS profile grid $H/bombgrid.yaml'

# ---------------- class 13: every other command ----------------
c 177 13 "numerics logmap --r nan" '$TS numerics logmap --r nan --steps 5'
c 178 13 "numerics logmap --x0 1e-400 (underflows a double; the reference reads it exactly)" '$TS numerics logmap --x0 1e-400 --steps 5 --name tinyx0 | sed -n 1,3p'
c 179 13 "numerics logmap --thresholds nan" '$TS numerics logmap --steps 5 --thresholds nan --name nanthr | sed -n 1,2p'
c 180 13 "numerics logmap --steps 100001 (above its documented 100000)" '$TS numerics logmap --steps 100001'
c 181 13 "numerics sum --n 0" '$TS numerics sum --n 0'
c 182 13 "numerics sum --n 1000000000000 (4 TB of floats), ulimit -v 4 GB" 'ulimit -v 4000000; $TS numerics sum --n 1000000000000'
c 183 13 "numerics sum --n -5" '$TS numerics sum --n -5'
c 184 13 "plot --smooth 1 (the range is [0, 1))" '$TS plot w1 loss --smooth 1 --format csv'
c 185 13 "plot --smooth nan" '$TS plot w1 loss --smooth nan --format csv'
c 186 13 "resources --warmup nan" '$TS resources w1 --warmup nan'
c 187 13 "resources --warmup -1" '$TS resources w1 --warmup -1 | sed -n 1,2p'
c 188 13 "stats --ref inf" '$TS stats test/accuracy tr pr --ref inf'
c 189 13 "stats --by a param no run has" '$TS stats test/accuracy tr pr --by no.such.param'
c 190 13 "eval --checkpoint with ../ out of the run folder" '$TS eval tr --checkpoint ../../../../../../etc/passwd'
c 191 13 "eval --checkpoint that does not exist" '$TS eval tr --checkpoint step-999.pt'
c 192 13 "rerun of a watch run (not a training)" '$TS rerun w1'
c 193 13 "rerun of a numerics run" '$TS rerun lm'
c 194 13 "diff of a watch run and a training" '$TS diff w1 tr'
c 195 13 "costmodel predict --batch -1" '$TS costmodel fit prof -o $H/cm.json > /dev/null 2>&1; $TS costmodel predict $H/good.yaml --model $H/cm.json --batch -1'
c 196 13 "costmodel predict --batch 1099511627776 (2^40)" 'ulimit -v 4000000; $TS costmodel fit prof -o $H/cm.json > /dev/null 2>&1; $TS costmodel predict $H/good.yaml --model $H/cm.json --batch 1099511627776 | sed -n 1,3p'
c 197 13 "costmodel fit in a store without profiled runs" '$TS_BIN --store sqlite:$H/c4.db costmodel fit -o $H/cm-empty.json'
c 198 13 "tune --batch-multiples nan" '$TS tune $H/good.yaml --batch-multiples nan --steps 30 --rounds 1'
c 199 13 "tune --batch-multiples 0" '$TS tune $H/good.yaml --batch-multiples 0 --steps 30 --rounds 1'
c 200 13 "serve --threads 0" 'timeout 5 $TS serve --port 0 --threads 0; echo "rc=$?" >&2'
c 201 13 "serve --threads 100000" 'timeout 5 $TS serve --port 0 --threads 100000 2>&1 | head -c 300 >&2; echo "rc=${PIPESTATUS[0]}" >&2'
c 202 13 "serve --bind 0.0.0.0 --token \"\" (an empty token off loopback)" 'timeout 5 $TS serve --bind 0.0.0.0 --port 0 --token ""; echo "rc=$?" >&2'
c 203 13 "runs list --offset -1" '$TS runs list --offset -1'
c 204 13 "runs list --limit 9223372036854775807" '$TS runs list --limit 9223372036854775807 | wc -l'
c 205 13 "completion zsh" '$TS completion zsh'
c 206 13 "profile --steps 0" '$TS profile $H/good.yaml --steps 0'
c 207 13 "--json with runs list --format csv (which wins?)" '$TS --json runs list --format csv --limit 1'
c 208 13 "env diff of a run with itself" '$TS env diff tr tr'
c 209 13 "metrics with a key that is a prefix of many (train/)" '$TS metrics tr train/'
c 210 13 "report throughput of a watch run and a numerics run" '$TS report throughput w1 lm | sed -n 1,4p'
c 211 13 "checklist of a watch run" '$TS checklist w1 | sed -n 1,3p'
c 212 13 "probes --histogram of a key that does not exist with --svg" '$TS probes pr --histogram no.layer/weights --svg $H/h.svg'
c 213 13 "probes --layer glob that matches nothing" '$TS probes pr --layer "nomatch*"'
c 214 13 "profile show --ops -1" '$TS profile show prof --ops -1'
c 215 13 "watch --name with a newline and control characters" '$TS -q watch --name "$(printf "a\nb\x1b[31mred")" -- true > /dev/null; $TS runs list --limit 1 --columns name | cat -A'

# ---------------- class 3 (more): a paused watch, a store named two ways ----------------
c 216 3 "a paused watch (SIGSTOP) whose heartbeat is an hour old survives a writer's open, then finishes" 'S=$H/c216.db; $TS_BIN --store sqlite:$S -q watch --name pw -- sh -c "sleep 3; echo trainscope: step=1 loss=1" > /dev/null & w=$!; sleep 1; kill -STOP $w; sqlite3 $S "update runs set heartbeat = heartbeat - 3600 where name = '"'"'pw'"'"'"; $TS_BIN --store sqlite:$S -q numerics logmap --steps 3 --name opener > /dev/null; $TS_BIN --store sqlite:$S runs list --columns name,status >&2; kill -CONT $w; wait $w; r=$?; $TS_BIN --store sqlite:$S runs list --columns name,status,metrics.loss >&2; exit $r'
c 217 3 "train --resume of a paused live run through a symlink to its store" 'S=$H/c217.db; p=$(start_long $S live); kill -STOP $p; ln -sf $S $H/c217-link.db; $TS_BIN --store sqlite:$H/c217-link.db train $H/long.yaml --resume live --no-progress; r=$?; kill -CONT $p; kill -INT $p; while kill -0 $p 2>/dev/null; do sleep 0.2; done; exit $r'

# CLEANUP=1 unmounts the tmpfs mounts of the fixtures after the run
if [ -n "$CLEANUP" ]; then for m in $H/rofs $H/small $H/ro4; do mountpoint -q $m && umount $m; done; fi
