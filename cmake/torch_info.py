"""What CMake needs to know about the torch a Python interpreter imports.

Run by cmake/TorchFromPython.cmake as `PYTHON cmake/torch_info.py`; prints
one `key=value` per line (nothing else on stdout) or exits non-zero with
one line on stderr. Never imports anything of trainscope's.
"""
import importlib.util
import os
import re
import sys
import sysconfig


def emit(info):
    info.update({
        "executable": sys.executable,
        "python_version": "%d.%d" % sys.version_info[:2],
        "python_include": sysconfig.get_paths()["include"],
        "ext_suffix": sysconfig.get_config_var("EXT_SUFFIX") or ".so",
        "site": os.path.dirname(info["dir"]),
    })
    for k, v in info.items():
        print(f"{k}={v}")
    return 0


def from_files(error):
    """The torch package's facts without running it: `make demo` installs
    only the wheel and the two CUDA runtime libraries libtorch_cpu links
    (the Makefile's TORCH_CORE), so `import torch` fails there while the
    C++ build and the CLI work."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.origin:
        print(f"cannot import torch: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    folder = os.path.dirname(os.path.abspath(spec.origin))
    with open(os.path.join(folder, "version.py")) as f:
        text = f.read()
    version = {}
    for name in ("__version__", "git_version", "cuda"):
        m = re.search(r"^%s\s*(?::[^=]*)?=\s*['\"]([^'\"]*)['\"]" % name, text, re.M)
        version[name] = m.group(1) if m else ""
    return emit({
        "version": version["__version__"], "git": version["git_version"],
        "cuda": version["cuda"], "cudnn": "", "dir": folder,
        "cxx11_abi": 1,  # every wheel since 2.7; older ones are out of range anyway
        "pybind11_compiler_type": "", "pybind11_stdlib": "", "pybind11_build_abi": "",
        "importable": 0,
        "import_error": f"{type(error).__name__}: {error}".splitlines()[0],
    })


def main():
    try:
        import torch
    except Exception as e:  # ImportError, or the OSError of a missing CUDA library
        return from_files(e)
    c = torch._C
    return emit({
        "version": torch.__version__,
        "git": getattr(torch.version, "git_version", "") or "",
        "cuda": torch.version.cuda or "",
        "cudnn": str(torch.backends.cudnn.version() or "") if torch.version.cuda else "",
        "dir": os.path.dirname(os.path.abspath(torch.__file__)),
        "cxx11_abi": int(bool(getattr(c, "_GLIBCXX_USE_CXX11_ABI", True))),
        "pybind11_compiler_type": getattr(c, "_PYBIND11_COMPILER_TYPE", "") or "",
        "pybind11_stdlib": getattr(c, "_PYBIND11_STDLIB", "") or "",
        "pybind11_build_abi": getattr(c, "_PYBIND11_BUILD_ABI", "") or "",
        "importable": 1,
    })


if __name__ == "__main__":
    sys.exit(main())
