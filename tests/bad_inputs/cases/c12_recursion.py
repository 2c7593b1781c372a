"""Issue 29, item 12: bounded recursion everywhere. Every reader of nested
text from outside (the filter language, YAML configs and study files, JSON
cost models and metric lines, a checkpoint's pickles) stops at 64 levels
with one line, where a filter of 30,000 parentheses crashed `runs list`
(exit 139, no message)."""

TITLE = "12. Bounded recursion everywhere"

DEEP = "(" * 30000 + "name = 'lm'" + ")" * 30000
NOTS = "not " * 30000 + "name = 'lm'"

CASES = [
    ("a filter of 30,000 nested parentheses", f"$TS runs list --filter \"{DEEP}\""),
    ("a filter of 30,000 nested 'not's", f"$TS runs list --filter \"{NOTS}\""),
    ("exporting with a filter of 30,000 nested parentheses",
     f"$TS runs export --filter \"{DEEP}\""),
    ("a config nested 100,000 levels in brackets", "$TS train $DIR/deep_flow.yaml"),
    ("a config nested 100 levels by indentation", "$TS train $DIR/deep_block.yaml"),
    ("a config whose aliases multiply it to 2^40 values", "$TS train $DIR/laughs.yaml"),
    ("a study file nested 100,000 levels in brackets", "$TS study run $DIR/deep_study.yaml"),
    ("a cost model nested 100,000 levels",
     "$TS costmodel predict $DIR/good.yaml --model $DIR/deep_model.json"),
    ("a metric line nested 10,000 levels is counted as malformed",
     "$TS -q watch --name deepline -- cat $DIR/deep_line.txt > /dev/null "
     "&& $TS runs show deepline --json | grep -o '\"metric_lines.malformed\": \"[0-9]*\"' >&2",
     {"ok": True}),
]


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def fixtures(d, run):
    write(f"{d}/deep_flow.yaml", "schedule: {milestones: " + "[" * 100000 + "]" * 100000 + "}\n")
    write(f"{d}/deep_block.yaml", "".join(" " * i + "k:\n" for i in range(100)))
    write(f"{d}/laughs.yaml", "a0: &a0 {x: 1, y: 1}\n" + "".join(
        f"a{i}: &a{i} {{x: *a{i - 1}, y: *a{i - 1}}}\n" for i in range(1, 40)))
    write(f"{d}/deep_study.yaml", f"study: deep\nbase: {d}/good.yaml\nreplicates: 1\n"
          "grid: {optimizer.lr: " + "[" * 100000 + "]" * 100000 + "}\n")
    write(f"{d}/deep_model.json", "{\"format\": " + "[" * 100000 + "]" * 100000 + "}\n")
    # 20 kB: under the 64 KiB a line may have, so it is parsed and refused.
    write(f"{d}/deep_line.txt", "{\"step\": 1, \"x\": " + "[" * 10000 + "]" * 10000 + "}\n")
