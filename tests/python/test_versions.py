"""A trainscope built for one torch, loaded beside another: one line that
names both versions and says how to rebuild, never an undefined symbol or a
crash. The other torch is a package named torch that has only a version
(what `import torch` and the CLI read first), ahead of the real one on the
path, or beside an installed layout of the CLI."""
import os
import pathlib
import shutil
import subprocess
import sys

import torch

import trainscope._build as built

CLI = pathlib.Path(os.environ["TS_CLI"])


def fake_torch(folder, version):
    pkg = folder / "torch"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(f"__version__ = {version!r}\nfrom torch import version\n")
    (pkg / "version.py").write_text(f"__version__ = {version!r}\ngit_version = 'abc'\ncuda = None\n")


def test_the_package_beside_another_torch_is_one_line(tmp_path):
    fake_torch(tmp_path, "2.11.0")
    env = dict(os.environ, PYTHONPATH=f"{tmp_path}:{os.environ['PYTHONPATH']}")
    p = subprocess.run([sys.executable, "-c", "import trainscope"], env=env,
                       capture_output=True, text=True)
    assert p.returncode == 1
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: trainscope was built for torch "
                           f"{built.TORCH_VERSION} and this environment has torch 2.11.0"), last
    assert "pip install" in last and "Segmentation" not in p.stderr
    # The real torch: the build's own, and the module loads.
    assert built.TORCH_VERSION == torch.__version__


def test_the_cli_beside_another_torch_is_one_line(tmp_path):
    # The layout pip install . makes: site/trainscope/{bin,lib/trainscope}, site/torch.
    site = tmp_path / "site"
    (site / "trainscope/bin").mkdir(parents=True)
    (site / "trainscope/lib/trainscope").mkdir(parents=True)
    shutil.copy(CLI, site / "trainscope/bin/trainscope")
    plugin = CLI.parent.parent / "lib/trainscope/libtrainscope_torch_commands.so"
    shutil.copy(plugin, site / "trainscope/lib/trainscope/")
    fake_torch(site, "2.14.1")
    exe = str(site / "trainscope/bin/trainscope")
    p = subprocess.run([exe, "env", "--with-torch"], capture_output=True, text=True)
    assert p.returncode != 0 and p.stdout == ""
    assert p.stderr.strip().splitlines() == [
        f"trainscope: the torch half of trainscope was built for torch {built.TORCH_VERSION} "
        f"and {site / 'torch'} holds torch 2.14.1: rebuild trainscope against it (make, or pip "
        "install --force-reinstall .)"], p.stderr
    # Commands that need no torch still run.
    assert subprocess.run([exe, "--version"], capture_output=True).returncode == 0
