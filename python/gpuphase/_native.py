"""The C libraries inside the package, loaded once, on first use, through
ctypes: libgpuphase-report (the report and the CI gate,
include/gpuphase/report.h) and libgpuphase-trace (the trace reader,
include/gpuphase/trace.h)."""
import ctypes
import os
import sys
import threading
from typing import Optional

HERE = os.path.dirname(os.path.abspath(__file__))
LIBS_NAME = ".gpuphase.mesonpy.libs"


def _lib_dir() -> str:
    """meson-python installs the wheel's shared libraries and programs in
    platlib's .gpuphase.mesonpy.libs, and this package in purelib: the same
    site-packages almost everywhere, but not where platlib is lib64 and
    purelib lib; platlib is on sys.path."""
    beside = os.path.join(os.path.dirname(HERE), LIBS_NAME)
    if os.path.isdir(beside):
        return beside
    for entry in sys.path:
        cand = os.path.join(entry or ".", LIBS_NAME)
        if os.path.isfile(os.path.join(cand, "libgpuphase.so")):
            return os.path.abspath(cand)
    return beside


LIB_DIR = _lib_dir()
BIN_DIR = LIB_DIR

_lock = threading.Lock()
_report: Optional[ctypes.CDLL] = None
_trace: Optional[ctypes.CDLL] = None

c_char_pp = ctypes.POINTER(ctypes.c_char_p)
c_size_p = ctypes.POINTER(ctypes.c_size_t)
c_int_p = ctypes.POINTER(ctypes.c_int)
c_buf_p = ctypes.POINTER(ctypes.c_void_p)


def library_path(name: str = "libgpuphase.so") -> str:
    """The path of one of the package's shared libraries (by default the one
    to preload: LD_PRELOAD=$(python -m gpuphase lib) python train.py)."""
    return os.path.join(LIB_DIR, name)


def _load(name: str, use_errno: bool = False) -> ctypes.CDLL:
    path = library_path(name)
    try:
        return ctypes.CDLL(path, use_errno=use_errno)
    except OSError as e:
        raise ImportError(f"gpuphase: cannot load {path}: {e}") from e


def report_lib() -> ctypes.CDLL:
    global _report
    with _lock:
        if _report is None:
            lib = _load("libgpuphase-report.so")
            sig = {
                "gpuphase_report_version": (ctypes.c_char_p, []),
                "gpuphase_report_opts_new": (ctypes.c_void_p, []),
                "gpuphase_report_opts_free": (None, [ctypes.c_void_p]),
                "gpuphase_report_opts_set": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p,
                                                            ctypes.c_char_p, ctypes.c_char_p,
                                                            ctypes.c_size_t]),
                "gpuphase_report_open": (ctypes.c_void_p, [c_char_pp, ctypes.c_size_t,
                                                           ctypes.c_void_p, c_int_p,
                                                           ctypes.c_char_p, ctypes.c_size_t]),
                "gpuphase_report_close": (None, [ctypes.c_void_p]),
                "gpuphase_report_truncated": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t]),
                "gpuphase_report_render": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p,
                                                          c_buf_p, c_size_p, ctypes.c_char_p,
                                                          ctypes.c_size_t]),
                "gpuphase_report_compare": (ctypes.c_int, [ctypes.c_char_p, c_char_pp,
                                                           ctypes.c_size_t, c_buf_p, c_size_p,
                                                           c_int_p, ctypes.c_char_p,
                                                           ctypes.c_size_t]),
                "gpuphase_report_buffer_free": (None, [ctypes.c_void_p]),
            }
            for fn, (res, args) in sig.items():
                f = getattr(lib, fn)
                f.restype, f.argtypes = res, args
            _report = lib
        return _report


def trace_lib() -> ctypes.CDLL:
    global _trace
    with _lock:
        if _trace is None:
            # errno: the reader keeps it on GPUPHASE_E_IO (ctypes.get_errno)
            lib = _load("libgpuphase-trace.so", use_errno=True)
            sig = {
                "gpuphase_strerror": (ctypes.c_char_p, [ctypes.c_int]),
                "gpuphase_reader_open": (ctypes.c_void_p, [ctypes.c_char_p, c_int_p]),
                "gpuphase_reader_open_sorted": (ctypes.c_void_p, [ctypes.c_char_p, c_int_p]),
                "gpuphase_reader_close": (None, [ctypes.c_void_p]),
                "gpuphase_reader_next": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p]),
                "gpuphase_reader_read": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p,
                                                        ctypes.c_size_t, c_size_p]),
                "gpuphase_reader_string": (ctypes.c_char_p, [ctypes.c_void_p, ctypes.c_uint64]),
                "gpuphase_reader_truncated": (ctypes.c_int, [ctypes.c_void_p]),
                "gpuphase_reader_errmsg": (ctypes.c_char_p, [ctypes.c_void_p]),
            }
            for fn, (res, args) in sig.items():
                f = getattr(lib, fn)
                f.restype, f.argtypes = res, args
            _trace = lib
        return _trace


def cstrings(items) -> "ctypes.Array[ctypes.c_char_p]":
    arr = (ctypes.c_char_p * (len(items) + 1))()
    for i, s in enumerate(items):
        arr[i] = os.fsencode(s)
    return arr


def take_buffer(ptr: ctypes.c_void_p, n: int) -> bytes:
    """The bytes of a buffer the report library allocated, which is freed."""
    try:
        return ctypes.string_at(ptr.value, n) if ptr.value else b""
    finally:
        report_lib().gpuphase_report_buffer_free(ptr)
