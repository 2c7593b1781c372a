"""Studies whose runs are a command of one's own (`command:` instead of
`base:`, issue 31): a study file that names no command, two things to run,
or a source the command cannot honour is refused before anything runs."""

TITLE = "15. Studies of a script"

CASES = [
    ("a command study whose command is empty", "$TS study run $DIR/cmd/empty.yaml"),
    ("a study with both a command and a base config", "$TS study run $DIR/cmd/both.yaml"),
    ("a command with a line break (two commands?)", "$TS study run $DIR/cmd/lines.yaml"),
    ("a command study that flips bits (only the trainer can)", "$TS study run $DIR/cmd/flip.yaml"),
    ("a command study that varies bitflip", "$TS study run $DIR/cmd/vary.yaml"),
    ("a command study whose source is the world size (only the trainer has ranks)",
     "$TS study run $DIR/cmd/ranks.yaml"),
]


def fixtures(d, run):
    import os
    os.makedirs(f"{d}/cmd")
    head = "study: cmd\nreplicates: 2\n"
    files = {
        "empty": head + "command: ''\nsources: [init]\n",
        "both": head + "command: python3 train.py\nbase: ../good.yaml\nsources: [init]\n",
        "lines": head + "command: \"python3 a.py\\npython3 b.py\"\nsources: [init]\n",
        "flip": head + "command: python3 train.py\nsources: [init, bitflip]\n",
        "vary": head + "command: python3 train.py\nvary: bitflip\ngrid: {lr: [0.1, 0.2]}\n",
        "ranks": head + "command: python3 train.py\nsources: [all, world_size]\n",
    }
    for name, text in files.items():
        with open(f"{d}/cmd/{name}.yaml", "w") as f:
            f.write(text)
