"""Issue 34: everyday use, round 2. A watched script's params (`--param`,
param lines, set once) and the TRAINSCOPE_* variables; TensorBoard event
files both ways: an export with nowhere to go or into a folder that already
holds event files, an import of a folder that is missing, holds no event
file, or holds a damaged record, refused before anything is written."""

TITLE = "17. Everyday use, round 2"


def fixtures(d, run):
    run("$TS -q runs export lm --format tfevents --out $DIR/tb")
    run("cp -r $DIR/tb $DIR/tb-damaged")
    # One byte of the first record's data flipped: its data CRC no longer holds.
    run("f=$(ls $DIR/tb-damaged/lm/*tfevents*) && "
        "python3 -c \"import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); "
        "b[14]^=0xff; open(p,'wb').write(bytes(b))\" \"$f\" && "
        "mv \"$f\" $DIR/tb-damaged/lm/events.out.tfevents.0.damaged")
    run("mkdir -p $DIR/no-events && touch $DIR/no-events/notes.txt")


def param_reason(name, printf):
    """Watches `printf FORMAT` as run NAME, then shows why its first
    malformed line was refused."""
    return (f"$TS -q watch --name {name} --param lr=0.1 -- printf '{printf}' > /dev/null && "
            f"$TS runs show {name} --json | grep -o "
            f"'\"metric_lines.first_malformed_reason\": \"[^\"]*\"' >&2",
            {"ok": True})


CASES = [
    ("a --param that is not key=value", "$TS watch --param lr -- true"),
    ("a --tag with an empty key", "$TS watch --tag =1 -- true"),
    ("TRAINSCOPE_TAGS that is not key=value", "TRAINSCOPE_TAGS=team $TS watch -- true"),
    ("a param line changing a --param", *param_reason("relr", "trainscope: param lr=0.2\\n")),
    ("a param line with a list", *param_reason("plist", '{"params": {"layers": [1, 2]}}\\n')),
    ("a param line whose params are not an object", *param_reason("pstr", '{"params": 3}\\n')),
    ("a tfevents export without --out", "$TS runs export lm --format tfevents"),
    ("a tfevents export into event files already there",
     "$TS runs export lm --format tfevents --out $DIR/tb"),
    ("importing a folder that does not exist", "$TS import tfevents $DIR/no-such-folder"),
    ("importing a folder without event files", "$TS import tfevents $DIR/no-events"),
    ("importing a damaged record", "$TS import tfevents $DIR/tb-damaged"),
    ("importing the same folder twice",
     "$TS -q import tfevents $DIR/tb > /dev/null && $TS import tfevents $DIR/tb | tail -1 >&2",
     {"ok": True}),
]
