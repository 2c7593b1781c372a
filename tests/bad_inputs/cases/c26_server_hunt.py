"""Issue 51, the third hunt's second tester: the dashboard's server speaks
HTTP as it says. A body no route reads (a GET's) is read and dropped, never
served as the next request; a Range reaches only an artifact, which serves
one range of its bytes (206) or says none are there (416, JSON), and any
other Range is ignored (the whole answer, once); a method or an HTTP
version it does not speak is 501 or 505, named; a CR or an LF that is not
a line's CR LF is refused; a Bearer token may follow several spaces. The
socket-level cases are in tests/serve/server_test.cc (ServeHttpTest)."""

TITLE = "26. A server speaks HTTP as it says (the third hunt's second tester)"

from _serve import serve  # cases/_serve.py (bad_inputs.py puts cases/ on the path)


HOST = "Host: 127.0.0.1\\r\\n"
INNER = "GET /api/runs HTTP/1.1\\r\\n" + HOST + "\\r\\n"  # 43 bytes
LAST = "GET /api/info HTTP/1.1\\r\\n" + HOST + "Connection: close\\r\\n\\r\\n"
RAW = "curl -s --max-time 5 telnet://$(echo $U | cut -d/ -f3) 2>/dev/null"
CKPT = "${U}api/runs/ck2/artifacts/checkpoints/step-000000002.pt"

CASES = [
    ("a GET whose body is another request: the body is read and dropped (two answers for "
     "the two requests, never the runs table)",
     serve("s26a", "printf 'GET /api/info HTTP/1.1\\r\\n" + HOST + "Content-Length: 43\\r\\n\\r\\n"
                   + INNER + LAST + "' | " + RAW + " > $DIR/s26a.got; "
                   "grep -a -o 'HTTP/1.1 200' $DIR/s26a.got | wc -l | grep -qx 2 && "
                   "! grep -q columns $DIR/s26a.got"), {"ok": True}),
    ("a GET with a chunked body: one answer, then the connection closes (never the chunk "
     "read as a request)",
     serve("s26b", "printf 'GET /api/info HTTP/1.1\\r\\n" + HOST + "Transfer-Encoding: chunked"
                   "\\r\\n\\r\\n2b\\r\\n" + INNER + "\\r\\n0\\r\\n\\r\\n' | " + RAW + " | "
                   "grep -a -o 'HTTP/1.1 [0-9]*' | wc -l | grep -qx 1"), {"ok": True}),
    ("a Range on a JSON answer: the whole JSON with 200, never a cut body",
     serve("s26c", "curl -s -w ' %{http_code}' -H 'Range: bytes=0-9' ${U}api/info | "
                   "grep -q '} 200$'"), {"ok": True}),
    ("one Range of an artifact: 206 with those bytes",
     serve("s26d", "curl -s -o /dev/null -w '%{http_code} %{size_download}' "
                   "-H 'Range: bytes=0-9' " + CKPT + " | grep -qx '206 10'"), {"ok": True}),
    ("a Range past an artifact's end: 416 with a JSON error",
     serve("s26e", "curl -s -H 'Range: bytes=999999999-' " + CKPT + " | "
                   "grep -q 'asks for none of the [0-9]* bytes.*\"status\":416}$'"), {"ok": True}),
    ("100 overlapping ranges of a 3 MB checkpoint: the whole file once (200), not 100 copies",
     serve("s26f", "W=$(curl -s -o /dev/null -w '%{size_download}' " + CKPT + ") && "
                   "curl -s -o /dev/null -w '%{http_code} %{size_download}\\n' --max-time 10 "
                   "-H \"Range: bytes=$(printf '0-,%.0s' $(seq 99))0-\" " + CKPT + " | "
                   "grep -qx \"200 $W\""), {"ok": True}),
    ("a method the server does not implement (501, naming it)",
     serve("s26g", "curl -s -X BREW ${U}api/info | "
                   "grep -q 'the method BREW is not implemented.*\"status\":501}$'"), {"ok": True}),
    ("a request line of HTTP/2.0 (505, naming it)",
     serve("s26h", "printf 'GET /api/info HTTP/2.0\\r\\n" + HOST + "\\r\\n' | " + RAW + " | "
                   "grep -q 'HTTP/2.0 is not a version.*\"status\":505}$'"), {"ok": True}),
    ("a bare CR inside a header value (400, as other control bytes)",
     serve("s26i", "printf 'GET /api/info HTTP/1.1\\r\\n" + HOST + "X-A: a\\rb\\r\\n\\r\\n' | "
                   + RAW + " | grep -q 'a bare CR.*\"status\":400}$'"), {"ok": True}),
    ("a Bearer token after two spaces (RFC 9110: 1*SP)",
     serve("s26j", "curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer  secret' "
                   "${U%%\\?*}api/info | grep -qx 200", "--token secret"), {"ok": True}),
]
