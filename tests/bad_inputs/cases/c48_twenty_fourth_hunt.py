"""Issue 51: what the twenty-fourth hunt found and this stop fixed
(docs/reliability.md, "A twenty-fourth hunt"): a damaged number named by
its query's SQL; and on the server: answers after which it closes that
said Keep-Alive, an empty --bind, a NULL heartbeat and event time shown as
1970."""

from c41_seventeenth_hunt import serve  # noqa: E402
from c44_twentieth_hunt import plant_copies, write_clients  # noqa: E402

TITLE = "48. A twenty-fourth hunt (issue 51)"

DAMAGED = {
    "s48": "UPDATE metric_keys SET last_step = 'x' WHERE run_id = "
           "(SELECT id FROM runs WHERE name = 'lm')",
    "n48": "UPDATE metric_chunks SET n = 1.5 WHERE key_id IN (SELECT k.id FROM metric_keys k "
           "JOIN runs r ON r.id = k.run_id WHERE r.name = 'lm')",
    "z48": "UPDATE runs SET heartbeat = NULL WHERE name = 'lm'",
}


def fixtures(d, run):
    plant_copies(d, DAMAGED)
    write_clients(d, CLIENTS)


CLIENTS = {
    "close48": """
import socket
host = b'Host: 127.0.0.1\\r\\n'
for request in (b'GET /' + b'a' * 20000 + b' HTTP/1.1\\r\\n' + host + b'\\r\\n',
                b'PUT /api/runs/lm/tags/x HTTP/1.1\\r\\n' + host +
                b'Content-Length: 99999999\\r\\n\\r\\n',
                b'GET /api/info HTTP/1.1\\r\\nHost: evil.example\\r\\n\\r\\n'):
    s = socket.create_connection((h, p))
    s.sendall(request)
    head = read_all(s).split(b'\\r\\n\\r\\n')[0].decode().split('\\r\\n')
    print(head[0].split()[1], [x for x in head if x.startswith(('Connection', 'Keep-Alive'))],
          end='; ', file=sys.stderr)
print(file=sys.stderr)
""",
    "live48": """
c = http.client.HTTPConnection(h, p)
c.request('GET', '/api/runs/lm/live')
print(json.load(c.getresponse())['heartbeat'], file=sys.stderr)
""",
}

CASES = [
    ("metrics of a key whose stored last step is the text 'x'",
     "$BARE --store sqlite:$DIR/s48.db metrics lm"),
    ("metrics of a key whose chunk counts 1.5 points",
     "$BARE --store sqlite:$DIR/n48.db metrics lm digits/f32.rx_1mx"),
    ("the API: a 414, a 413 and a foreign Host's 403 say Connection: close, no Keep-Alive",
     serve("t", "close48", "--allow-writes"), {"ok": True}),
    ("serve --bind '' (no address)", "$BARE --store sqlite:$DIR/t.db serve --port 0 --bind ''"),
    ("the API's live poll of a run whose heartbeat is NULL: null, not 1970",
     serve("z48", "live48"), {"ok": True}),
]
