"""Issue 51: what two tenth testers found on the build with the ninth
hunt's fixes (docs/reliability.md, "A tenth tester"), each fixed: B on
statuses, the server and the HTTP API's and Python's rule; A on untrusted
bytes, output and the rule elsewhere."""

import contextlib
import sqlite3

from c20_one_rule import py  # noqa: E402
from c34_ninth_hunt import HOST, serve  # noqa: E402

TITLE = "35. A tenth tester (issue 51)"

# A command study whose command is `trainscope watch` (the `trainscope` of
# a command is the one running the study): watch's run is the planned run
# (D8).
WATCH_STUDY = ("printf 'study: s35\\ncommand: \"trainscope watch -- true\"\\nsources: [all]\\n"
               "replicates: 2\\nretries: 0\\n' > $DIR/s35.yaml")


def fixtures(d, run):
    run(WATCH_STUDY)
    run("$BARE --store sqlite:$DIR/s35.db -q study run $DIR/s35.yaml > /dev/null")
    # The study's own run crashed: recorded running, its process gone (D12).
    run("cp $DIR/s35.db $DIR/c35.db")
    with contextlib.closing(sqlite3.connect(f"{d}/c35.db")) as db:
        db.execute("UPDATE runs SET status = 'running', end_time = NULL, pid = 999999, "
                   "pid_start = 0 WHERE name = 's35'")
        db.commit()


# Another host's run whose heartbeat is an hour ahead of this clock (A-D11),
# and an environment key holding a terminal's escapes (A-D6).
AHEAD = ("cp $DIR/t.db $DIR/h35.db && python3 -c \"import sqlite3, sys; db = sqlite3.connect("
         "sys.argv[1]); db.execute('UPDATE runs SET status = ?, end_time = NULL, host = ?, pid = 0, "
         "heartbeat = strftime(?, ?) + 3600 WHERE name = ?', ('running', 'otherhost', '%s', 'now', "
         "'lm')); db.commit()\" $DIR/h35.db && ")
ESCAPED_KEY = ("cp $DIR/t.db $DIR/g35.db && python3 -c \"import sqlite3, sys; db = sqlite3.connect("
               "sys.argv[1]); db.execute('INSERT INTO environment SELECT id, ?, ? FROM runs WHERE "
               "name = ?', ('x\\x1b]0;pwned\\x07\\x1b[2J.y', '1', 'lm')); db.commit()\" "
               "$DIR/g35.db && ")


def status_of(client):
    return HOST + "c = http.client.HTTPConnection(h, int(p)); " + client


# A planned run another process is training now: its pid, live (D3).
LIVE = ("cp $DIR/s35.db $DIR/r35.db; sleep 60 & S=$!; python3 -c \"import sqlite3, sys; "
        "db = sqlite3.connect(sys.argv[1]); db.execute('UPDATE runs SET status = ?, end_time = "
        "NULL, pid = ?, pid_start = 0, heartbeat = strftime(?, ?) WHERE name = ?', ('running', "
        "int(sys.argv[2]), '%s', 'now', 'all/r1')); db.commit()\" $DIR/r35.db $S; ")
CRASHED_API = status_of("c.request('GET', '/api/studies'); print([s['status'] for s in "
                        "json.load(c.getresponse())['studies']], file=sys.stderr)")
NOT_ONE_HOST = status_of("c.request('GET', '/api/info', headers={'Host': '127.evil.example'}); "
                         "r = c.getresponse(); print(r.status, json.load(r)['error'], "
                         "file=sys.stderr)")
EMPTY_AUTHORITY = status_of("c.putrequest('GET', 'http:///api/info', skip_host=True); "
                            "c.putheader('Host', h); c.endheaders(); r = c.getresponse(); "
                            "print(r.status, json.load(r)['error'], file=sys.stderr)")
POST_PAGE = status_of("c.request('POST', '/', body=b'x'); r = c.getresponse(); "
                      "print(r.status, r.getheader('Allow'), file=sys.stderr)")
COOKIE = status_of("c.request('GET', '/?token=tok35'); r = c.getresponse(); "
                   "print(r.getheader('Set-Cookie').split('=')[0] == 'trainscope_token_' + p, "
                   "file=sys.stderr)")
CONTINUE = ("import socket, sys; h, p = sys.argv[1].split('/')[2].split(':'); "
            "s = socket.create_connection((h, int(p)), timeout=10); s.sendall(b'PUT "
            "/api/runs/s35/tags/x HTTP/1.1\\\\r\\\\nHost: 127.0.0.1\\\\r\\\\nContent-Length: "
            "900000\\\\r\\\\nExpect: 100-continue\\\\r\\\\n\\\\r\\\\n'); "
            "print(s.recv(200).split(b'\\\\r\\\\n')[0].decode(), file=sys.stderr)")
DAEMON = ("import threading, time, sys, trainscope as t; s = sys.argv[1]; ev = threading.Event()"
          "; f = lambda: [(r.log({'a': 1.0}, step=i), ev.set(), time.sleep(0.01)) for r in "
          "[t.start_run(name='d', store=s, record_environment=False)] for i in range(10 ** 6)]; "
          "threading.Thread(target=f, daemon=True).start(); ev.wait(60)")

WEB_FIFO = status_of("c.request('GET', '/'); print(c.getresponse().status, file=sys.stderr)")

CASES = [
    # D1: only an address of 127.0.0.0/8 or localhost is this machine
    ("GET with Host 127.evil.example (a name, not an address)", serve("s35", NOT_ONE_HOST),
     {"ok": True}),
    # D2: an absolute-form target's authority is held to Host's rule
    ("GET http:///api/info (an empty authority)", serve("s35", EMPTY_AUTHORITY), {"ok": True}),
    # D3: a planned run another process is training is left alone
    ("study resume while a planned run is running in another process",
     LIVE + "$BARE --store sqlite:$DIR/r35.db -q study resume s35 2>&1 > /dev/null | "
     "sed -E 's/pid [0-9]+ on [^)]+/pid PID on HOST/' >&2; R=${PIPESTATUS[0]}; kill $S; exit $R"),
    # D4: a page only reads: 405 with Allow
    ("POST / (a dashboard page)", serve("s35", POST_PAGE), {"ok": True}),
    # D5: a token cookie per server
    ("the token cookie's name (one per port)", serve("s35", COOKIE, "--token tok35"),
     {"ok": True}),
    # D6: what draws as nothing is blank
    ("Python: a metric key of U+200D (zero width joiner)",
     *py("py35a", "r = t.start_run(store=s, record_environment=False); "
         "r.log({'\\u200d': 1.0}, step=0)")),
    ("Python: a run named U+3164 (Hangul filler)",
     *py("py35b", "t.start_run(name='\\u3164', store=s, record_environment=False)")),
    # D7: the artifact name rule is what the disk takes
    ("Python: log_artifact with a part of 250 bytes",
     *py("py35c", "r = t.start_run(store=s, record_environment=False); open('$DIR/a35.txt', "
         "'w').write('a'); r.log_artifact('$DIR/a35.txt', name='x' * 250)")),
    ("Python: log_artifact named a/ /b (a part of blanks)",
     *py("py35d", "r = t.start_run(store=s, record_environment=False); open('$DIR/a35.txt', "
         "'w').write('a'); r.log_artifact('$DIR/a35.txt', name='a/ /b')")),
    # D8: watch as a study's command is the planned run
    ("a command study whose command is trainscope watch",
     "rm -f $DIR/w35.db*; $BARE --store sqlite:$DIR/w35.db -q study run $DIR/s35.yaml "
     "> /dev/null && $BARE --store sqlite:$DIR/w35.db runs list --format csv --columns "
     "name,status | sort | tr '\\n' ' ' >&2", {"ok": True}),
    # D9: nothing of the program outlives watch, even one killed by SIGKILL
    ("watch killed by SIGKILL while its program's child runs",
     "$BARE --store sqlite:$DIR/k35.db -q watch -- bash -c 'sleep 31.5; true' & W=$!; sleep 1.5; "
     "T=$(ps -e -o pid=,args= | awk '$2 == \"sleep\" && $3 == \"31.5\" {print $1}'); "
     "kill -9 $W; wait $W 2>/dev/null; sleep 1; S=$(ps -o stat= -p $T); case \"$S\" in ''|Z*) "
     "echo it ended with watch >&2;; *) kill $T; echo left running >&2; "
     "exit 1;; esac", {"ok": True}),
    # D10: a daemon thread's run cut off by the interpreter's end
    ("Python: a daemon thread's run when the interpreter ends",
     f"rm -f $DIR/py35e.db*; $PY -c \"{DAEMON}\" sqlite:$DIR/py35e.db 2> /dev/null && $BARE --store "
     "sqlite:$DIR/py35e.db runs show d --json | grep -o '\"status\": \"[a-z]*\"' | head -1 >&2",
     {"ok": True}),
    # D11: a read-only server refuses a change before its body
    ("PUT of a tag with Expect: 100-continue on a read-only server", serve("s35", CONTINUE),
     {"ok": True}),
    # D12: a crashed study is stale to every reader
    ("study status --json of a study whose process is gone",
     "$BARE --store sqlite:$DIR/c35.db --json study status s35 | python3 -c \"import json, sys; "
     "print(json.load(sys.stdin)['study']['status'], file=sys.stderr)\"", {"ok": True}),
    ("GET /api/studies with a study whose process is gone", serve("c35", CRASHED_API),
     {"ok": True}),
    # Tester A. D12: a stored git.commit never reaches a shell command
    # (tests/repro: RerunTest); D2: the package cache's checksum
    # (tests/env: recreate_test); D1: a record key of blanks (tests/store).
    # D3: the GEMM peak cache has a checksum and a plausible range
    # D4: a closed stdout is closed for rank 0 too
    ("train --nproc 2 with stdout closed", "$TS -q train $DIR/good.yaml --nproc 2 --no-progress >&-"),
    # D5: a script's environment entries in groups of its own
    ("Python: an environment entry in a group trainscope measures (build.*)",
     *py("py35f", "t.start_run(store=s, record_environment=False, "
         "environment={'build.trainscope.commit': 'forged'})")),
    ("Python: an environment entry whose key is only blanks",
     *py("py35g", "t.start_run(store=s, record_environment=False, environment={' ': '1'})")),
    # D6: env diff escapes a group's name
    ("env diff of a run whose environment key holds terminal escapes",
     ESCAPED_KEY + "$BARE --store sqlite:$DIR/g35.db env diff lm ck | grep -a '^\\[x' | "
     "cat -v >&2", {"ok": True}),
    # D7: an artifact kind is a kind name, and not one trainscope reads
    ("Python: log_artifact of kind trace (the profiler's own)",
     *py("py35h", "r = t.start_run(store=s, record_environment=False); open('$DIR/a35.txt', "
         "'w').write('a'); r.log_artifact('$DIR/a35.txt', kind='trace')")),
    ("Python: log_artifact of kind ' '",
     *py("py35i", "r = t.start_run(store=s, record_environment=False); open('$DIR/a35.txt', "
         "'w').write('a'); r.log_artifact('$DIR/a35.txt', kind=' ')")),
    # D8: a NUL in a watch() setting is shown, not where the message ends
    ("Python: watch() with a setting holding a NUL",
     *py("py35j", "import torch; r = t.start_run(store=s, record_environment=False); "
         "r.watch(torch.nn.Linear(2, 2), settings=['drift.every=1\\x00junk'])")),
    # D9: run.experiment is held to the store's rule where the config is read
    ("config show with run.experiment holding U+2066",
     "$TS config show $DIR/good.yaml --set \"run.experiment=$(printf 'a\\342\\201\\246b')\""),
    # D10: TRAINSCOPE_WEB_DIR serves regular files only
    ("serve with TRAINSCOPE_WEB_DIR whose index.html is a FIFO",
     "rm -rf $DIR/w35; mkdir $DIR/w35; mkfifo $DIR/w35/index.html; export "
     "TRAINSCOPE_WEB_DIR=$DIR/w35; " + serve("s35", WEB_FIFO), {"ok": True}),
    # D11: a heartbeat far ahead of this clock is no heartbeat
    ("runs list with a run whose heartbeat is an hour ahead (another host)",
     AHEAD + "$BARE --store sqlite:$DIR/h35.db runs list --filter \"name = 'lm'\" --format csv "
     "--columns name,status | tail -1 >&2", {"ok": True}),
]
