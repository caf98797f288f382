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


def _version() -> str:
    try:
        from . import _native
        return _native.report_lib().gpuphase_report_version().decode()
    except ImportError:
        return "unknown"


__version__ = _version()

__all__ = ["Error", "TraceError", "UsageError", "Report", "Comparison", "Records",
           "report", "compare", "check", "records", "range", "step", "items",
           "preloaded", "library_path", "__version__"]
