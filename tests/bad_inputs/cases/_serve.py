"""A case that talks to a dashboard: `serve(name, check, flags)` starts
`trainscope serve` on a free port with FLAGS (its address in $U once it
prints it), runs the shell CHECK, stops the server and exits with CHECK's
status. Shared by the server classes (c22, c23, c26, c27)."""

SERVE = ("$TS serve --port 0 {2} > $DIR/{0}.out & P=$!; for i in $(seq 100); do "
         "grep -qs http $DIR/{0}.out && break; sleep 0.1; done; "
         "U=$(grep -o 'http://[^ ]*' $DIR/{0}.out); {1}; R=$?; kill $P; wait $P; exit $R")


def serve(name, check, flags=""):
    return SERVE.format(name, check, flags)
