"""Issue 29, item 10: `watch` stays linear, and one rule reads metric lines.
A folder is refused before a run is recorded (it recorded a failed run); a
metric line that breaks the rule (docs/monitor.md) is skipped, counted, and
kept with the reason, which these cases print from the run's tags."""

TITLE = "10. `watch` stays linear"


def tagged(name, printf, tag="first_malformed_reason"):
    """Watches `printf FORMAT` as run NAME, then shows one metric_lines tag."""
    return (f"$TS -q watch --name {name} -- printf '{printf}' > /dev/null && "
            f"$TS runs show {name} --json | grep -o '\"metric_lines.{tag}\": \"[^\"]*\"' >&2",
            {"ok": True})


CASES = [
    ("watching a folder", "$TS watch -- $DIR"),
    ("watching a file that is not a program", "$TS watch -- $DIR/good.yaml"),
    ("a metric line with an empty key", *tagged("emptykey", "trainscope: step=1 =0.5\\n")),
    ("a metric line with a NUL in a key", *tagged("nulkey", "trainscope: step=1 a\\0b=0.5\\n")),
    ("a JSON metric line with an empty key", *tagged("jsonkey", '{"step": 1, "": 0.5}\\n')),
    ("a fractional step", *tagged("fracstep", "trainscope: step=1.5 loss=0.5\\n")),
    ("a fractional step in JSON", *tagged("fracjson", '{"step": 2.5, "loss": 0.5}\\n')),
    ("a step out of range", *tagged("farstep", "trainscope: step=1e30 loss=0.5\\n")),
    ("a negative step", *tagged("negstep", '{"step": -3, "loss": 0.5}\\n')),
    ("a hexadecimal number (JSON has none)", *tagged("hexnum", "trainscope: step=1 loss=0x10\\n")),
    ("a number beyond a double", *tagged("hugenum", '{"step": 1, "loss": 1e999}\\n')),
    ("a key twice in one line", *tagged("twice", "trainscope: step=1 loss=1 loss=2\\n")),
    ("metric lines after '\\r', as tqdm redraws them",
     *tagged("tqdm", "\\r 10%%|#   |\\rtrainscope: step=1 loss=1\\r 20%%|##  |"
                     "\\rtrainscope: step=2 loss=0.5\\r\\n", "parsed")),
    ("a line longer than 64 KiB",
     "$TS -q watch --name long -- sh -c \"head -c 100000 /dev/zero | tr '\\\\0' x\" > /dev/null "
     "&& $TS runs show long --json | grep -o '\"metric_lines.overlong\": \"[^\"]*\"' >&2",
     {"ok": True}),
]
