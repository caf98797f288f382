"""gpuphase: where did the GPU time go? The Python side of the profiler.

    gpuphase run -- python train.py          # one trace per process
    import gpuphase
    r = gpuphase.report("gpuphase-*.gph")    # the analysis, by the C library
    print(r.summary()); r.data["devices"]; r   # (a notebook shows the page)

See docs/python.md."""
from ._errors import Error, TraceError, UsageError
from ._markers import items, preloaded, range, step
from ._native import library_path
from ._records_iter import Records, records
from ._report import Comparison, Report, check, compare, report


def __getattr__(name: str) -> str:
    # The version is the C library's (meson.build's project version), read
    # when asked: importing gpuphase for its markers loads no library.
    if name == "__version__":
        from . import _native
        return _native.report_lib().gpuphase_report_version().decode()
    raise AttributeError(f"module 'gpuphase' has no attribute {name!r}")


# gpuphase.range is public, but not in __all__: `from gpuphase import *`
# must not hide the builtin range.
__all__ = ["Error", "TraceError", "UsageError", "Report", "Comparison", "Records",
           "report", "compare", "check", "records", "step", "items",
           "preloaded", "library_path", "__version__"]
