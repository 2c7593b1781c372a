"""2. Plans have a size: counted before they are built, refused beyond a
limit with the count and the estimated time unless a flag confirms."""

TITLE = "2. Plans have a size"


def fixtures(d, run):
    grid = "".join(f"  seeds.k{k}: [{', '.join(str(v) for v in range(20))}]\n" for k in range(7))
    with open(f"{d}/huge-study.yaml", "w") as f:
        f.write(f"study: huge\nbase: {d}/good.yaml\ngrid:\n{grid}replicates: 2\nworkers: 2\n")
    with open(f"{d}/wide-study.yaml", "w") as f:
        f.write(f"study: wide\nbase: {d}/good.yaml\ngrid:\n"
                f"  seeds.master: [{', '.join(str(v) for v in range(100))}]\nreplicates: 5\n"
                "workers: 2\n")
    with open(f"{d}/many-replicates.yaml", "w") as f:
        f.write(f"study: many\nbase: {d}/good.yaml\nsources: [init]\nreplicates: 99999999999\n")


CASES = [
    ("a grid of 2.56 billion runs", "$TS study run $DIR/huge-study.yaml"),
    ("a plan larger than --max-runs allows", "$TS study run $DIR/wide-study.yaml --max-runs 100"),
    ("a limit of no runs", "$TS study run $DIR/wide-study.yaml --max-runs 0"),
    ("replicates beyond any counter", "$TS study run $DIR/many-replicates.yaml"),
]
