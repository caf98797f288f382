"""gpuphase: where did the GPU time go? The Python side of the profiler.

    gpuphase run -- python train.py          # one trace per process
    import gpuphase
    r = gpuphase.report("gpuphase-*.gph")    # the analysis, by the C library
    print(r.summary()); r.data["devices"]; r   # (a notebook shows the page)

See docs/python.md."""
from ._errors import Error, TraceError, UsageError
from ._markers import items, preloaded, step
# gpuphase.range is public, but not in __all__ (`from gpuphase import *`
# must not hide the builtin range): "as range" re-exports it for type
# checkers (mypy --strict: implicit re-exports are not exported).
from ._markers import range as range  # noqa: F401
from ._native import library_path
from ._records_iter import Records, records
from ._report import Comparison, Report, check, compare, report


def __getattr__(name: str) -> str:
    # The version is the C library's (meson.build's project version), read
    # when asked: importing gpuphase for its markers loads no library (nor
    # does `from gpuphase import *`: __version__ is not in __all__). Without
    # the library there is no version: an AttributeError, so that
    # hasattr(gpuphase, "__version__") is False.
    if name == "__version__":
        from . import _native
        try:
            lib = _native.report_lib()
        except ImportError as e:
            raise AttributeError(f"gpuphase.__version__ is the C library's: {e}") from e
        return str(lib.gpuphase_report_version().decode())
    raise AttributeError(f"module 'gpuphase' has no attribute {name!r}")


__all__ = ["Error", "TraceError", "UsageError", "Report", "Comparison", "Records",
           "report", "compare", "check", "records", "step", "items",
           "preloaded", "library_path"]
