"""python -m gpuphase: the programs of the package (HELP, below, says how
to call them). The console scripts gpuphase and gpuphase-report are these
same entry points; each replaces the Python process with the C program
(exec)."""
import os
import signal
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


def _default_signals() -> None:
    """Python ignores SIGPIPE and SIGXFSZ from its start; an ignored
    signal stays ignored across exec, so the C program, and through
    `gpuphase run` the profiled one, would see them ignored where the
    shell left them to kill (as subprocess's restore_signals does)."""
    for name in ("SIGPIPE", "SIGXFSZ"):
        sig = getattr(signal, name, None)
        if sig is not None:
            signal.signal(sig, signal.SIG_DFL)


def _print(text: str) -> int:
    """Prints text as the C programs print: a reader gone (`| head`)
    ends the process quietly."""
    _default_signals()
    print(text)
    sys.stdout.flush()
    return 0


def _exec(prog: str, args: List[str]) -> int:
    path = os.path.join(_native.BIN_DIR, prog)
    _default_signals()
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
        if " " in path or ":" in path:  # LD_PRELOAD splits its list there
            print("gpuphase: warning: the library's path has a space or a colon, which "
                  "LD_PRELOAD cannot take: use 'gpuphase run', or preload a link to it "
                  "from a path without one", file=sys.stderr)
        return _print(path)
    if args[:1] in (["-h"], ["--help"], ["help"]):
        return _print(HELP)
    return _exec("gpuphase", args)


if __name__ == "__main__":
    sys.exit(main())
