"""Issue 51: what the thirty-second hunt found and this stop fixed
(docs/reliability.md, "A thirty-second hunt"): a recorded command whose
words ran together; HTTP/1.0 answers that said Keep-Alive; two
Authorization headers answered by their order; a Python script ended by
SIGTERM that left its run running and lost its last points; a param given
again as the same number written otherwise; numpy.ma.masked recorded as
NaN."""

from c20_one_rule import py  # noqa: E402

TITLE = "57. A thirty-second hunt (issue 51)"

P57 = "$BARE --store sqlite:$DIR/p57.db"
# A request with two Authorization headers to a server with a token.
TWICE = ("import http.client, sys; h, p = sys.argv[1].split('/')[2].split(':'); "
         "c = http.client.HTTPConnection(h, int(p)); c.putrequest('GET', '/api/info'); "
         "c.putheader('Authorization', 'Bearer wrong'); "
         "c.putheader('Authorization', 'Bearer s3cret'); c.endheaders(); "
         "r = c.getresponse(); print(r.status, r.read().decode(), file=sys.stderr)")
SERVE = ("$TS serve --port 0 --token s3cret > $DIR/s57.out & P=$!; for i in $(seq 100); do "
         "grep -qs http $DIR/s57.out && break; sleep 0.1; done; "
         "U=$(grep -o 'http://[^ ?]*' $DIR/s57.out | head -1); ")


def status_of(store, name):
    return (f"$BARE --store sqlite:$DIR/{store}.db --json runs show {name} | "
            "grep -o '\"status\": \"[a-z]*\"' >&2")


CASES = [
    ("watch records its command's words as a shell reads them back",
     "$TS -q watch --name cq57 -- sh -c 'echo a b' 'x y' > /dev/null && $TS --json runs show "
     "cq57 | grep -o '\"watch.command\": \"[^\"]*\"' >&2", {"ok": True}),
    ("serve: two Authorization headers, the wrong one first",
     SERVE + f"python3 -c \"{TWICE}\" \"$U\"; R=$?; kill $P; wait $P; exit $R", {"ok": True}),
    ("Python: SIGTERM to a script with an open run (Slurm, a stopping study)",
     "rm -f $DIR/py57a.db*; ($PY -c \"import os, sys, trainscope as t; r = t.start_run(name="
     "'term', store=sys.argv[1], record_environment=False); r.log({'loss': 1.0}, step=1); "
     "os.kill(os.getpid(), 15)\" sqlite:$DIR/py57a.db; true) 2> /dev/null; "
     + status_of("py57a", "term"),
     {"ok": True}),
    ("Python: a param given again as the same number written otherwise (1, then 1.0)",
     *py("py57b", "r = t.start_run(store=s, config={'e': 1}); r.log_params({'e': 1.0}); "
         "r.finish(); print('taken', file=sys.stderr)")),
    ("Python: ... and as another number",
     *py("py57c", "r = t.start_run(store=s, config={'e': 1}); r.log_params({'e': 2})",
         "2>&1 | tail -1 | sed -E 's/\\b[0-9a-f]{8}\\b/<id>/g' >&2")),
    ("a watched program's param line repeating --param lr=0.1 as 0.10",
     f"{P57} -q watch --name pl57 --param lr=0.1 -- sh -c \"echo 'trainscope: param lr=0.10'\" "
     f"> /dev/null && {P57} --json runs show pl57 | grep -o '\"metric_lines.malformed\": "
     "\"[0-9]*\"' >&2", {"ok": True}),
    ("Python: log() of numpy.ma.masked",
     *py("py57d", "import numpy as np; t.start_run(store=s).log({'ma': np.ma.masked})")),
]
