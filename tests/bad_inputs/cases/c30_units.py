"""Issue 47: units built apart, loaded from the shared libraries
TRAINSCOPE_UNITS names (instrument::load_units). A path that is not there,
not a regular file, not a library or a library without a unit: one line
naming the variable and the library, before the command runs (any command:
the CLI loads them first). tests/capability/load_test.py loads a real one."""

TITLE = "30. Units built apart (issue 47)"

CASES = [
    ("TRAINSCOPE_UNITS names a library that is not there",
     "TRAINSCOPE_UNITS=$DIR/absent.so $TS runs list"),
    ("TRAINSCOPE_UNITS names a FIFO: refused, not waited on",
     "rm -f $DIR/u30.so; mkfifo $DIR/u30.so; TRAINSCOPE_UNITS=$DIR/u30.so timeout 20 $TS runs list"),
    ("TRAINSCOPE_UNITS names a text file",
     "printf 'not a library\\n' > $DIR/t30.so; TRAINSCOPE_UNITS=$DIR/t30.so $TS runs list"),
    ("TRAINSCOPE_UNITS names a library with no unit in it",
     "TRAINSCOPE_UNITS=/lib/x86_64-linux-gnu/libm.so.6 $TS runs list"),
    ("a unit's key without its library",
     "$TS train $DIR/good.yaml --set sign_flips.every=2"),
]
