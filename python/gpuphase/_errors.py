"""Exceptions carrying the C libraries' error codes and messages, and the
package's warnings."""
import sys
import warnings


class Error(Exception):
    """An error of the gpuphase C libraries.

    ``code`` is the library's code: for the report and the CI gate a
    ``gpuphase_report_error`` (1 input, 2 memory, 3 usage, 4 output;
    include/gpuphase/report.h), for the trace reader a ``gpuphase_error``
    (-1 I/O, -2 not a trace, -3 too new, -4 truncated header, -5 corrupt,
    -6 memory, -7 argument; include/gpuphase/trace.h). ``message`` is the
    library's one-line message."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code
        self.message = message

    def __reduce__(self):
        # pickled (a process pool's worker raising it) and copied with both
        # arguments: args holds the message alone, as str(err) wants
        return (type(self), (self.code, self.message))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code}, message={self.message!r})"


class TraceError(Error):
    """A trace cannot be read: missing, not a trace, corrupt, too new."""


class UsageError(Error, ValueError):
    """A bad option, value or argument."""


REPORT_E_INPUT, REPORT_E_NOMEM, REPORT_E_USAGE, REPORT_E_OUTPUT = 1, 2, 3, 4


def report_error(code: int, message: str) -> Error:
    cls = {REPORT_E_INPUT: TraceError, REPORT_E_USAGE: UsageError}.get(code, Error)
    if code == REPORT_E_NOMEM:
        return MemoryError(message)  # type: ignore[return-value]
    return cls(code, message)


def warn(message: str) -> None:
    """A RuntimeWarning attributed to the first caller outside the package
    (gpuphase.Report(...) and gpuphase.report(...) alike)."""
    level, f = 2, sys._getframe(1)
    while f.f_back is not None and f.f_globals.get("__name__", "").split(".")[0] == "gpuphase":
        f = f.f_back
        level += 1
    warnings.warn(message, RuntimeWarning, stacklevel=level)
