"""Issue 29, item 9: YAML says what it ignored. yaml-cpp keeps one value of
a key given twice and YAML::Load drops every document after the first;
trainscope refuses both, and names an unknown key as unknown whatever it
holds, each with its line. Configs and study files share the check
(core/yaml_checks.h); the study files here are refused either way (one
replicate), so that no case trains."""

TITLE = "9. YAML says what it ignored"

T = "$TS train --no-progress"
S = "$TS study run"

CASES = [
    ("a config key given twice", f"{T} $DIR/dup_key.yaml"),
    ("a config section given twice", f"{T} $DIR/dup_section.yaml"),
    ("a config key given twice in a flow mapping", f"{T} $DIR/dup_flow.yaml"),
    ("a second document in a config", f"{T} $DIR/two_docs.yaml"),
    ("an unknown top-level key holding a nested list", f"{T} $DIR/unknown_nested.yaml"),
    ("a list where one value belongs", f"{T} $DIR/list_value.yaml"),
    ("a study file with a key given twice", f"{S} $DIR/study_dup.yaml"),
    ("a study file with a second document", f"{S} $DIR/study_docs.yaml"),
    ("a config that starts with '---' and ends with an empty document",
     f"{T} $DIR/doc_markers.yaml -q", {"ok": True}),
]

GOOD = ("data: {dataset: synthetic, synthetic: {size: 256}}\n"
        "model: {name: mlp}\ntrain: {epochs: 1, batch_size: 64, max_steps: 1}\n")


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def fixtures(d, run):
    write(f"{d}/dup_key.yaml", GOOD + "optimizer:\n  lr: 0.01\n  name: sgd\n  lr: 5\n")
    write(f"{d}/dup_section.yaml", "model: {name: lenet5}\n" + GOOD)
    write(f"{d}/dup_flow.yaml", GOOD + "optimizer: {lr: 0.01, lr: 5}\n")
    write(f"{d}/two_docs.yaml", GOOD + "---\ntrain: {epochs: 50}\n")
    write(f"{d}/unknown_nested.yaml", GOOD + "b: [[1, 2], [3]]\n")
    write(f"{d}/list_value.yaml", GOOD + "eval: {batch_size: [64, 128]}\n")
    write(f"{d}/doc_markers.yaml", "---\n" + GOOD + "---\n")
    study = f"study: dup\nbase: {d}/good.yaml\nsources: [init]\n"
    write(f"{d}/study_dup.yaml", study + "replicates: 0\nreplicates: 1\n")
    write(f"{d}/study_docs.yaml", study + "replicates: 1\n---\nreplicates: 3\n")
