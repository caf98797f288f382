"""python -m gpuphase: the programs of the package (HELP, below, says how
to call them). The console scripts gpuphase and gpuphase-report are these
same entry points; each replaces the Python process with the C program
(exec)."""
import os
import sys
from typing import List, Optional

from . import _native

# The help is a string of its own, not the docstring: python -OO drops
# docstrings.
HELP = """python -m gpuphase: the programs of the package.

    python -m gpuphase run [-o PATTERN] -- CMD...   (= gpuphase run)
    python -m gpuphase report [OPTIONS] FILE...     (= gpuphase-report)
    python -m gpuphase lib                          (the library to preload)
    python -m gpuphase --version | --help

The console scripts gpuphase and gpuphase-report are these same entry
points; each replaces the Python process with the C program (exec)."""


def _exec(prog: str, args: List[str]) -> int:
    path = os.path.join(_native.BIN_DIR, prog)
    try:
        os.execv(path, [prog] + args)
    except OSError as e:
        print(f"gpuphase: cannot run {path}: {e.strerror}", file=sys.stderr)
        return 126 if os.path.exists(path) else 127


def run_main() -> int:
    """The gpuphase console script."""
    return _exec("gpuphase", sys.argv[1:])


def report_main() -> int:
    """The gpuphase-report console script."""
    return _exec("gpuphase-report", sys.argv[1:])


def main(argv: Optional[List[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["report"]:
        return _exec("gpuphase-report", args[1:])
    if args[:1] == ["lib"]:
        path = _native.library_path()
        if not os.path.isfile(path):
            print(f"gpuphase: the library to preload is missing: {path} "
                  "(a broken install: reinstall the gpuphase package)", file=sys.stderr)
            return 1
        print(path)
        return 0
    if args[:1] in (["-h"], ["--help"], ["help"]):
        print(HELP)
        return 0
    return _exec("gpuphase", args)


if __name__ == "__main__":
    sys.exit(main())
