"""Issue 51, the third hunt's second tester (docs/reliability.md): the
rules of the earlier classes, made whole where the tester found a gap.

- One rule for names and keys (store/accept.h): the C1 controls
  U+0080..U+009F (NEL breaks a line, CSI starts a terminal's escape
  sequence) are control characters as C0's are, and bytes that are not
  UTF-8 are refused (JSON, the API and Python could only give them back as
  U+FFFD, a name no reference matches). Messages show them escaped.
- A step is read exactly from its digits: 2^53 + 1 is refused, never
  stored as 2^53.
- A FIFO or a device named as an event file refuses `import tfevents` by
  name, as every reader of a file refuses one.
- A config changed in the store after its run recorded it (its SHA-256
  not) is never trained again nor built into a model: rerun, a resume,
  eval and weights refuse it (5, a store error, as an artifact that fails
  its SHA-256).
- `-o -` is stdout for `weights` too; a folder of files is never written
  to a folder named '-'.

Watched runs go into $DIR/c23.db, so that t.db stays as the other classes
see it."""
import contextlib
import sqlite3

TITLE = "23. One rule, whole (the third hunt's second tester)"

C23 = "$BARE --store sqlite:$DIR/c23.db"
REHASH = "$BARE --store sqlite:$DIR/rehash.db"

from _serve import serve  # cases/_serve.py (bad_inputs.py puts cases/ on the path)


def fixtures(d, run):
    # ck2 of t.db whose config says lr 0.5 where it trained with 0.001; its
    # config_hash is the one recorded (runs keep their UUIDs: <ck2>).
    run("cp $DIR/t.db $DIR/rehash.db")
    with contextlib.closing(sqlite3.connect(f"{d}/rehash.db")) as db, db:
        db.execute("UPDATE runs SET config_text = replace(config_text, 'lr: 0.001', 'lr: 0.5') "
                   "WHERE name = 'ck2'")
        assert db.total_changes == 1


def reason(name, printf):
    """Watches a printf of a metric line; shows why the line was malformed."""
    return (f"{C23} -q watch --name {name} -- printf '{printf}' > /dev/null && "
            f"{C23} runs show {name} --json | grep -o "
            f"'\"metric_lines.first_malformed_reason\": \"[^\"]*\"' >&2", {"ok": True})


def py(store, code):
    """Runs CODE in $PY with `t` the package and `s` a fresh store; shows
    the last line (the exception)."""
    return (f"rm -f $DIR/{store}.db*; $PY -c \"import sys, trainscope as t; s = sys.argv[1]; "
            f"{code}\" sqlite:$DIR/{store}.db 2>&1 | tail -1 >&2", {"ok": True})


CASES = [
    # A FIFO or a device named as an event file (D3).
    ("a FIFO named as an event file, the only one of an imported folder (refused by name, "
     "never opened nor skipped)",
     "rm -rf $DIR/tbfifo && mkdir -p $DIR/tbfifo/r && mkfifo $DIR/tbfifo/r/events.out.tfevents.1.x "
     "&& timeout 20 $TS import tfevents $DIR/tbfifo"),
    ("a FIFO named as an event file beside a good one (the import refused whole)",
     "rm -rf $DIR/tbmix && $TS -q runs export lm --format tfevents --out $DIR/tbmix > /dev/null "
     "&& mkdir -p $DIR/tbmix/zz && mkfifo $DIR/tbmix/zz/events.out.tfevents.1.x && "
     "timeout 20 $TS import tfevents $DIR/tbmix"),
    ("an event file that is a link to /dev/zero",
     "rm -rf $DIR/tbzero && mkdir -p $DIR/tbzero/r && "
     "ln -s /dev/zero $DIR/tbzero/r/events.out.tfevents.9.z && "
     "timeout 20 $TS import tfevents $DIR/tbzero"),
    # A config changed in the store (D4).
    ("rerun of a run whose stored config no longer matches its recorded SHA-256 (config_hash)",
     f"{REHASH} -q rerun ck2 > /dev/null"),
    ("resuming such a run", f"{REHASH} train $DIR/good.yaml --resume ck2"),
    ("eval of such a run", f"{REHASH} eval ck2"),
    ("weights of such a run (nothing written)",
     f"{REHASH} weights ck2 -o $DIR/rehash.pt; c=$?; test ! -e $DIR/rehash.pt && exit $c"),
    # -o - (D6).
    ("weights -o - writes the state dict to stdout, as every other -o - does (no file named '-')",
     "cd $DIR && rm -f ./- && $TS -q weights ck2 -o - > $DIR/ck2-stdout.pt && test ! -e $DIR/- "
     "&& head -c 2 $DIR/ck2-stdout.pt | grep -qx PK", {"ok": True}),
    ("a folder of files given as '-' (numerics logmap --out -)",
     "cd $DIR && rm -rf ./- && $TS numerics logmap --steps 2 --out -; c=$?; "
     "test ! -e $DIR/- && exit $c"),
    # A step read exactly (D7).
    ("a metric line's step of 2^53+1 (refused, not stored as 2^53)",
     *reason("bigstep", "trainscope: step=9007199254740993 loss=0.5\\n")),
    ("a JSON metric line's step of 2^53+1 (refused, not stored as 2^53)",
     *reason("bigstepj", '{"step": 9007199254740993, "loss": 0.5}\\n')),
    ("a step with more digits than a double keeps (1.0000000000000000001 is no integer)",
     *reason("finestep", "trainscope: step=1.0000000000000000001 loss=0.5\\n")),
    ("a step of 2^53 written as 90071992547409.92e2 (stored at 2^53, exactly)",
     f"{C23} -q watch --name exactstep -- printf 'trainscope: step=90071992547409.92e2 "
     f"loss=0.5\\n' > /dev/null && {C23} metrics exactstep loss --format csv | tail -1 | "
     "cut -d, -f1 >&2", {"ok": True}),
    # The C1 controls are control characters (D8).
    ("a run name holding the C1 control character NEL (U+0085)",
     "$TS watch --name \"$(printf 'a\\302\\205b')\" -- true"),
    ("a --tag key holding the C1 control character CSI (U+009B)",
     "$TS watch --tag \"$(printf 'a\\302\\233b=1')\" -- true"),
    ("an experiment holding the C1 control character U+0090",
     "$TS watch --experiment \"$(printf 'e\\302\\220')\" -- true"),
    ("a metric line's key holding NEL (U+0085)",
     *reason("c1key", "trainscope: step=1 a\\302\\205b=0.5\\n")),
    ("Python: a run name holding NEL (U+0085)",
     *py("pyc1", "t.start_run(store=s, name='a\\x85b', record_environment=False)")),
    ("a tag key holding NEL (U+0085) through the API (400)",
     serve("s23i", "curl -s -X PUT --data-binary v \"${U}api/runs/lm/tags/%C2%85\" | "
                   "grep -q '\"status\":400}$'", "--allow-writes"), {"ok": True}),
    # Names and keys are UTF-8 text (D9).
    ("a run name that is not UTF-8 (JSON and the API could only give it back as U+FFFD)",
     "$BARE --store sqlite:$DIR/utf8.db watch --name \"$(printf 'a\\377b')\" -- true"),
    ("a --param key that is not UTF-8 (Latin-1)",
     "$TS watch --param \"$(printf 'caf\\351=1')\" -- true"),
    ("TRAINSCOPE_TAGS with a key that is not UTF-8",
     "TRAINSCOPE_TAGS=\"$(printf 'k\\377=1')\" $TS watch -- true"),
    ("a metric line's key that is not UTF-8", *reason("badkey", "trainscope: step=1 a\\377b=0.5\\n")),
    ("a tag key that is not UTF-8 through the API (400)",
     serve("s23a", "curl -s -X PUT --data-binary v \"${U}api/runs/lm/tags/%FF\" | "
                   "grep -q '\"status\":400}$'", "--allow-writes"), {"ok": True}),
    ("watch of a program whose file name is not UTF-8 (the run is named with U+FFFD)",
     "ln -sf /bin/true \"$DIR/$(printf 'x\\377y')\" && "
     f"{C23} -q watch -- \"$DIR/$(printf 'x\\377y')\" && "
     f"{C23} runs list --columns name --format csv | grep -qx \"$(printf 'x\\357\\277\\275y')\"",
     {"ok": True}),
]
