"""What CMake needs to know about the torch a Python interpreter imports.

Run by cmake/TorchFromPython.cmake as `PYTHON cmake/torch_info.py`; prints
one `key=value` per line (nothing else on stdout) or exits non-zero with
one line on stderr. Never imports anything of trainscope's.
"""
import os
import sys
import sysconfig


def main():
    try:
        import torch
    except Exception as e:  # ImportError, or a broken install's OSError
        print(f"cannot import torch: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    c = torch._C
    info = {
        "version": torch.__version__,
        "git": getattr(torch.version, "git_version", "") or "",
        "cuda": torch.version.cuda or "",
        "cudnn": str(torch.backends.cudnn.version() or "") if torch.version.cuda else "",
        "dir": os.path.dirname(os.path.abspath(torch.__file__)),
        "cxx11_abi": int(bool(getattr(c, "_GLIBCXX_USE_CXX11_ABI", True))),
        "pybind11_compiler_type": getattr(c, "_PYBIND11_COMPILER_TYPE", "") or "",
        "pybind11_stdlib": getattr(c, "_PYBIND11_STDLIB", "") or "",
        "pybind11_build_abi": getattr(c, "_PYBIND11_BUILD_ABI", "") or "",
        "executable": sys.executable,
        "python_version": "%d.%d" % sys.version_info[:2],
        "python_include": sysconfig.get_paths()["include"],
        "ext_suffix": sysconfig.get_config_var("EXT_SUFFIX") or ".so",
        "site": os.path.dirname(os.path.dirname(os.path.abspath(torch.__file__))),
    }
    for k, v in info.items():
        print(f"{k}={v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
