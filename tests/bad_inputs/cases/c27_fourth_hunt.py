"""Issue 51: what a fourth tester found in 60 cases on the build with the
third hunt's fixes (docs/reliability.md), each fixed: a rerun's derived name
past the name rule, run.experiment checked by the config with less than the
store's rule, a wrong method on a tag answered 404, a 405 without Allow."""

TITLE = "27. A fourth tester's four (issue 51)"

from _serve import serve  # cases/_serve.py (bad_inputs.py puts cases/ on the path)


LONG = "$(printf 'n%.0s' $(seq 256))"

CASES = [
    ("rerun of a run whose name is 256 bytes (the rerun's name is made to fit)",
     f"$BARE --store sqlite:$DIR/c27.db -q train $DIR/good.yaml --name \"{LONG}\" --no-progress "
     f"> /dev/null && $BARE --store sqlite:$DIR/c27.db -q rerun \"{LONG}\" > /dev/null",
     {"ok": True}),
    ("a config's run.experiment holding the C1 control character NEL (named as --set, as C0 is)",
     "$TS train $DIR/good.yaml --set \"run.experiment=$(printf 'e\\302\\205x')\""),
    ("a config's run.experiment that is not UTF-8",
     "$TS train $DIR/good.yaml --set \"run.experiment=$(printf 'e\\377')\""),
    ("GET on a tag (it takes PUT or DELETE): 405 with Allow, not 404",
     serve("s27a", "curl -s -D - -o /dev/null ${U}api/runs/lm/tags/foo | "
                   "tr -d '\\r' | grep -q '^Allow: PUT, DELETE'", "--allow-writes"), {"ok": True}),
    ("a 405 names the methods the resource takes (Allow)",
     serve("s27b", "curl -s -X DELETE -D - -o /dev/null ${U}api/runs | tr -d '\\r' | "
                   "grep -qi '^Allow: GET, HEAD'"), {"ok": True}),
]
