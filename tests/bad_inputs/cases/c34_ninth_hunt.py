"""Issue 51: what a ninth tester found in 63 cases on the build with the
eighth hunt's fixes (docs/reliability.md, "A ninth tester"), each fixed."""

import contextlib
import sqlite3

from c20_one_rule import py  # noqa: E402
from tfevents_writer import write_events  # tests/support, on bad_inputs.py's path

TITLE = "34. A ninth tester (issue 51)"


def fixtures(d, run):
    # Scalars under keys trainscope records itself.
    write_events(f"{d}/tb34/own", [(1, "proc/rss_mib", 99999.0), (1, "energy/total_kwh", 5.0)])
    # A run whose stored UUID would lead a folder out of the working one,
    # and a drift record whose key is not UTF-8.
    run("$BARE --store sqlite:$DIR/u34.db -q watch --name u34 -- true")
    run("$BARE --store sqlite:$DIR/d34.db -q train $DIR/good.yaml --name dr --no-progress "
        "--set drift.every=2")
    with contextlib.closing(sqlite3.connect(f"{d}/u34.db")) as db:
        db.execute("UPDATE runs SET uuid = '../../..-crafted' WHERE name = 'u34'")
        db.commit()
    with contextlib.closing(sqlite3.connect(f"{d}/d34.db")) as db:
        db.execute("UPDATE records SET key = CAST(x'66ff6f' AS TEXT) WHERE rowid = "
                   "(SELECT min(rowid) FROM records WHERE kind = 'drift')")
        db.commit()
    run("printf 'study: s34\\ncommand: true\\nsources: [all]\\nreplicates: 2\\nretries: 0\\n' "
        "> $DIR/s34.yaml; $BARE --store sqlite:$DIR/s34.db -q study run $DIR/s34.yaml "
        "> /dev/null 2>&1; true")


def serve(store, client, args=""):
    return (f"$BARE --store sqlite:$DIR/{store}.db serve --port 0 {args} > "
            f"$DIR/{store}.out & P=$!; for i in $(seq 100); do grep -qs http $DIR/{store}.out && "
            f"break; sleep 0.1; done; U=$(grep -o 'http://[^ ]*' $DIR/{store}.out); python3 -c "
            f"\"{client}\" \"$U\"; R=$?; kill $P; wait $P; exit $R")


HOST = "import http.client, json, sys; h, p = sys.argv[1].split('/')[2].split(':'); "
STUDY = (HOST + "c = http.client.HTTPConnection(h, int(p)); c.request('GET', '/api/studies/s34'); "
         "s = json.load(c.getresponse())['status']; print({k: s[k] for k in "
         "['recorded_nothing', 'gave_up', 'set_aside']}, file=sys.stderr)")
AUTH = (HOST + "c = http.client.HTTPConnection(h, int(p)); c.request('GET', '/api/info'); "
        "r = c.getresponse(); print(r.status, r.getheader('WWW-Authenticate'), file=sys.stderr)")
ABSOLUTE = (HOST + "c = http.client.HTTPConnection(h, int(p)); c.putrequest('GET', "
            "'http://' + h + ':' + p + '/api/info', skip_host=True); c.putheader('Host', h); "
            "c.endheaders(); print(c.getresponse().status, file=sys.stderr)")
SORT = (HOST + "c = http.client.HTTPConnection(h, int(p)); c.request('GET', "
        "'/api/runs?sort=foo'); r = c.getresponse(); print(r.status, json.load(r)['error'], "
        "file=sys.stderr)")
START = "r = t.start_run(store=s, record_environment=False); open('$DIR/a34.txt', 'w').write('a'); "

CASES = [
    # Not a defect: an imported run has no sampler, so the file is the one
    # writer of its proc/* and energy/* (trainscope's own export comes back)
    ("import tfevents of scalars named proc/rss_mib and energy/total_kwh",
     "$TS import tfevents $DIR/tb34 > /dev/null && $TS resources own | grep rss_mib | tr -s ' ' >&2",
     {"ok": True}),
    # D1: a stored UUID names no folder before it is checked
    ("env recreate of a run whose stored UUID is ../../..-crafted",
     "mkdir -p $DIR/e34/w && cd $DIR/e34/w && $BARE --store sqlite:$DIR/u34.db env recreate u34"),
    # D2: a damaged drift record is blamed for what is wrong with it
    ("runs view of a drift record whose key is not UTF-8",
     "$BARE --store sqlite:$DIR/d34.db runs view dr drift"),
    # D3: an artifact name has a rule, checked as an argument
    ("Python: log_artifact with a name holding a terminal escape",
     *py("py34a", START + "r.log_artifact('$DIR/a34.txt', name='z\\x1b[2J')")),
    ("Python: log_artifact with a name holding a newline",
     *py("py34b", START + "r.log_artifact('$DIR/a34.txt', name='n\\nl')")),
    ("Python: log_artifact with a name of 300 bytes",
     *py("py34c", START + "r.log_artifact('$DIR/a34.txt', name='y' * 300)")),
    ("Python: log_artifact with a name of 5000 bytes",
     *py("py34d", START + "r.log_artifact('$DIR/a34.txt', name='x' * 5000)")),
    # D4: the API's study status says what the CLI's does
    ("GET a study whose planned runs recorded nothing", serve("s34", STUDY), {"ok": True}),
    # D5: a 401 says how to authenticate
    ("GET without the token a server needs", serve("s34", AUTH, "--token tok34"), {"ok": True}),
    # D6: a request target in absolute form
    ("GET http://host:port/api/info (absolute form)", serve("s34", ABSOLUTE), {"ok": True}),
    # D7: the API names its own parameters
    ("GET /api/runs?sort=foo", serve("s34", SORT), {"ok": True}),
    # D8: a token a URL and a cookie carry as they are
    ("serve --token holding a semicolon", "$TS serve --port 0 --token 'ab;cd'"),
    # D9: keys of Unicode blanks, or with a bidirectional control
    ("Python: a metric key of a no-break space",
     *py("py34e", "r = t.start_run(store=s, record_environment=False); r.log({'\\u00a0': 1.0}, step=0)")),
    ("Python: a metric key holding a right-to-left override",
     *py("py34f", "r = t.start_run(store=s, record_environment=False); "
         "r.log({'a\\u202eevil': 1.0}, step=0)")),
    ("a --tag key of an ideographic space", "$TS watch --tag \"$(printf '\\343\\200\\200')=1\" -- true"),
    # D10: a program ends with watch, even a watch killed by SIGKILL
    ("watch killed by SIGKILL while its program runs",
     "$TS -q watch -- sleep 30 & W=$!; sleep 1; C=$(pgrep -P $W); kill -9 $W; "
     "wait $W 2>/dev/null; sleep 0.5; S=$(ps -o stat= -p $C); case \"$S\" in ''|Z*) "
     "echo the program ended with watch >&2;; *) kill $C; echo left running >&2; exit 1;; "
     "esac", {"ok": True}),
]
