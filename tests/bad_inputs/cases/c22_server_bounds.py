"""Issue 51, class 5: a server bounds what a client can hold. The
dashboard reads a request's line and headers on a poller (10 s, 64 KiB),
so only whole requests reach its workers; it checks the token before it
reads a body; it answers headers it does not implement as HTTP says. The
socket-level cases (40 clients that never finish their headers, a header a
byte at a time, more connections from one address than it keeps) are in
tests/serve/server_test.cc (ServeHttpTest)."""

TITLE = "22. A server bounds what a client can hold (the third hunt)"

from _serve import serve  # cases/_serve.py (bad_inputs.py puts cases/ on the path)


CASES = [
    ("a body in a Transfer-Encoding the server does not implement (501, JSON)",
     serve("s22a", "curl -s -X POST -H 'Transfer-Encoding: gzip, chunked' --data-binary x "
                   "${U}api/runs | grep -q 'is not implemented.*\"status\":501}$'"), {"ok": True}),
    ("an expectation other than 100-continue (417, JSON)",
     serve("s22b", "curl -s -X POST -H 'Expect: something' --data-binary x ${U}api/runs | "
                   "grep -q '\"status\":417}$'"), {"ok": True}),
    ("a compressed request body (415: never inflated)",
     serve("s22c", "curl -s -X POST -H 'Content-Encoding: gzip' --data-binary x ${U}api/runs | "
                   "grep -q '\"status\":415}$'"), {"ok": True}),
    ("a declared body over 1 MiB (413 before it is read)",
     serve("s22d", "curl -s -X PUT -H 'Content-Length: 2000000' -H 'Expect:' ${U}api/runs/lm/tags/x "
                   "--max-time 5 | grep -q '\"status\":413}$'"), {"ok": True}),
    ("a tag PUT without the token, its body announced (401 before the body, not 100 Continue)",
     serve("s22e", "curl -s -o /dev/null -w '%{http_code}' -X PUT -H 'Expect: 100-continue' "
                   "--data-binary @/dev/null ${U%%\\?*}api/runs/lm/tags/x | grep -qx 401",
           "--allow-writes --token secret"), {"ok": True}),
    ("a tag value over 4096 bytes through the API (400)",
     serve("s22f", "head -c 4097 /dev/zero | tr '\\0' v | curl -s -X PUT --data-binary @- "
                   "\"${U}api/runs/lm/tags/note\" | grep -q 'longer than 4096 bytes.*\"status\":400'",
           "--allow-writes"), {"ok": True}),
    # The second hunt: a control byte in a header and a folded header line
    # were taken; a body that stopped arriving was called malformed.
    ("a NUL byte in a header's value (400, before any worker)",
     serve("s22g", "printf 'GET /api/info HTTP/1.1\\r\\nHost: x\\r\\nX-A: a\\0b\\r\\n\\r\\n' | "
                   "curl -s --max-time 5 telnet://$(echo $U | cut -d/ -f3) 2>/dev/null | "
                   "grep -q 'control byte 0x00.*\"status\":400}$'"), {"ok": True}),
    ("a header folded onto a second line (obs-fold: 400)",
     serve("s22h", "printf 'GET /api/info HTTP/1.1\\r\\nHost: x\\r\\nX-A: a\\r\\n b\\r\\n\\r\\n' | "
                   "curl -s --max-time 5 telnet://$(echo $U | cut -d/ -f3) 2>/dev/null | "
                   "grep -q 'obs-fold.*\"status\":400}$'"), {"ok": True}),
    ("a body that stops arriving (408 after 10 s, not 400)",
     serve("s22i", "(printf 'PUT /api/runs/lm/tags/x HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n"
                   "Content-Length: 10\\r\\n\\r\\nabc'; sleep 14) | "
                   "curl -s --max-time 20 telnet://$(echo $U | cut -d/ -f3) 2>/dev/null | "
                   "grep -q 'body did not all arrive within 10 s.*\"status\":408}$'",
           "--allow-writes"), {"ok": True}),
]
