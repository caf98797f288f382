"""gpuphase.records(): the records of a trace, streamed by the C reader
(libgpuphase-trace, include/gpuphase/trace.h) in chunks, as NumPy structured
arrays when NumPy is installed, else as lists of named tuples."""
import collections
import ctypes
import errno
import operator
import os
import struct
import threading
from typing import Any, Dict, Iterable, Iterator, List, Optional

from . import _native
from ._errors import TraceError, UsageError, REPORT_E_USAGE
from ._records import KINDS
from ._report import PathLike, fs_path

GPUPHASE_E_IO = -1  # include/gpuphase/trace.h: open/read failed, errno kept

STRING_FIELDS = ("name", "reason", "domain")  # string ids, as dump shows them


class Blob(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("len", ctypes.c_uint64)]


_CTYPES = {"uint64_t": ctypes.c_uint64, "int64_t": ctypes.c_int64, "gpuphase_blob": Blob}
_STRUCTS = {num: type("gpuphase_" + low, (ctypes.Structure,),
                      {"_fields_": [(f, _CTYPES[t]) for f, _c, t in fields]})
            for num, low, fields in KINDS}


class _Union(ctypes.Union):
    _fields_ = [(low, _STRUCTS[num]) for num, low, _f in KINDS]


class Record(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_uint32), ("u", _Union)]


NAMES = {num: low for num, low, _f in KINDS}
NUMS = {low: num for num, low, _f in KINDS}
FIELDS = {low: [f for f, _c, _t in fields] for _n, low, fields in KINDS}
_BLOBS = {num: [f for f, c, _t in fields if c == "B"] for num, _l, fields in KINDS}
_TUPLES = {low: collections.namedtuple(low, ["index"] + FIELDS[low]) for low in NUMS}
_UNION_AT = Record.u.offset
_STRING = NUMS["string"]
# struct layouts of the kinds (all fields 8 bytes, blobs pointer + length)
_UNPACK = {num: struct.Struct("=" + "".join("QQ" if t == "gpuphase_blob" else
                                             "q" if t == "int64_t" else "Q"
                                             for _f, _c, t in fields)).unpack_from
           for num, _l, fields in KINDS}


def _with_blobs(kind: int, vals: tuple, blobs: Dict[str, bytes]) -> list:
    out, j = [], 0
    for f, c, _t in KINDS_BY_NUM[kind]:
        if c == "B":
            out.append(blobs[f])
            j += 2
        else:
            out.append(vals[j])
            j += 1
    return out


KINDS_BY_NUM = {num: fields for num, _l, fields in KINDS}


def _pandas_dtypes(kind: str) -> Dict[str, str]:
    """The dtypes of to_pandas(kind)'s columns but the texts, by name, in
    order (what the NumPy chunks hold)."""
    out = {"index": "uint64"}
    for f, c, t in KINDS_BY_NUM[NUMS[kind]]:
        out[f] = "object" if c == "B" else "int64" if t == "int64_t" else "uint64"
    return out


def _numpy():
    try:
        import numpy
        return numpy
    except ImportError:
        return None


class Records:
    """An iterator over a trace's records in chunks: each chunk is a dict
    from kind name ('api', 'kernel', 'memcpy', 'range', ...) to the records
    of that kind read in this chunk, in file order. A record's ``index`` is
    its position among all records of the trace (what ``gpuphase-report
    dump`` prints on line index + 1). Memory is one chunk at a time.

    One object may be used from several threads: its calls are serialised
    (a lock), and close() waits for a call in progress."""

    def __init__(self, path: PathLike, kinds: Optional[Iterable[str]] = None,
                 chunk_size: int = 65536, sorted: bool = False, numpy: Optional[bool] = None):
        self._lock = threading.RLock()
        self._r: Optional[int] = None
        self.path = fs_path(path)
        if not isinstance(sorted, bool):
            raise TypeError(f"sorted is True or False, not {type(sorted).__name__}")
        if isinstance(kinds, str):
            kinds = [kinds]
        if kinds is not None and not isinstance(kinds, Iterable):
            raise TypeError(f"kinds is a record kind or a list of them, not {type(kinds).__name__}")
        self.kinds = None if kinds is None else set(kinds)
        odd = [k for k in self.kinds or () if not isinstance(k, str)]
        if odd:
            raise TypeError(f"kinds holds record kind names (str), not "
                            f"{type(odd[0]).__name__}")
        unknown = sorted_(self.kinds - set(NUMS)) if self.kinds else []
        if unknown:
            raise UsageError(REPORT_E_USAGE, f"unknown record kind {unknown[0]!r}: "
                             + ", ".join(NUMS))
        if not isinstance(chunk_size, (bool, int)):
            try:
                chunk_size = operator.index(chunk_size)  # NumPy integers too
            except TypeError:
                pass
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
            raise UsageError(REPORT_E_USAGE, f"invalid chunk_size {chunk_size!r}: expected a count >= 1")
        self.chunk_size = chunk_size
        if numpy is not None and not isinstance(numpy, bool):
            raise TypeError(f"numpy is True, False or None, not {type(numpy).__name__}")
        self._np = _numpy() if numpy is not False else None
        if numpy and self._np is None:
            raise ImportError("gpuphase.records(numpy=True): NumPy is not installed")
        lib = _native.trace_lib()
        err = ctypes.c_int(0)
        opener = lib.gpuphase_reader_open_sorted if sorted else lib.gpuphase_reader_open
        ctypes.set_errno(0)
        self._r = opener(os.fsencode(self.path), ctypes.byref(err))
        if not self._r:
            # the reader keeps errno for an I/O error (ctypes.get_errno: the
            # file is not opened again here, which would block on a FIFO)
            e = ctypes.get_errno() if err.value == GPUPHASE_E_IO else 0
            msg = lib.gpuphase_strerror(err.value).decode()
            if e == errno.ESPIPE:  # what the reader and report() say
                msg = "not a regular file (a trace is read from a file, not a pipe or a device)"
            elif e:
                msg = f"cannot open: {os.strerror(e)}"
            raise TraceError(err.value, f"{self.path}: {msg}")
        self._index = 0
        self._done = False
        self.truncated = False

    def string(self, sid: int) -> Optional[str]:
        """The text of string id sid ('' for 0, None if never defined so far)."""
        if isinstance(sid, bool) or not isinstance(sid, int):
            try:
                sid = operator.index(sid)  # NumPy integers too
            except TypeError:
                raise TypeError(f"a string id is an int, not {type(sid).__name__}") from None
        if not 0 <= sid < 1 << 64:
            raise ValueError(f"string id {sid} is out of range (0 to 2**64 - 1)")
        with self._lock:
            if not self._r:
                raise UsageError(REPORT_E_USAGE, f"{self.path}: the trace is closed")
            s = _native.trace_lib().gpuphase_reader_string(self._r, int(sid))
        return None if s is None else s.decode("utf-8", "replace")

    def __iter__(self) -> Iterator[Dict[str, Any]]:
        return self

    def __next__(self) -> Dict[str, Any]:
        # the whole chunk under the lock: its blobs point into the reader
        # until its next call, and close() frees them
        with self._lock:
            return self._next()

    def _next(self) -> Dict[str, Any]:
        if self._done:
            raise StopIteration
        if not self._r:
            raise UsageError(REPORT_E_USAGE, f"{self.path}: the trace is closed")
        lib = _native.trace_lib()
        read, r = lib.gpuphase_reader_read, self._r
        n_max = self.chunk_size
        # the buffer grows with the records read (doubling, up to the
        # chunk's size): a large chunk_size costs nothing on a small trace
        cap = min(n_max, 1024)
        buf = (Record * cap)()
        size = ctypes.sizeof(Record)
        blobs: Dict[int, Dict[str, bytes]] = {}
        n = 0
        rc = 1
        got = ctypes.c_size_t()
        while n < n_max:  # batches: one C call for many records
            if n == cap:
                cap = min(n_max, 2 * cap)
                grown = (Record * cap)()
                ctypes.memmove(grown, buf, n * size)
                buf = grown
            rc = read(r, ctypes.byref(buf, n * size), cap - n, ctypes.byref(got))
            n += got.value
            if rc != 1:
                break
            k = buf[n - 1].kind
            if _BLOBS.get(k) and k != _STRING:  # valid only until the next call
                blobs[n - 1] = self._blobs(buf[n - 1])
        if rc < 0 and n == 0:  # else the records before the error first
            msg = (lib.gpuphase_reader_errmsg(r) or b"").decode("utf-8", "replace")
            self._done = True  # the iteration ends here
            self.close()
            raise TraceError(rc, f"{self.path}: {lib.gpuphase_strerror(rc).decode()}: {msg}")
        if rc == 0:
            self._done = True
            self.truncated = bool(lib.gpuphase_reader_truncated(r))
        first = self._index
        self._index += n
        if n == 0:
            raise StopIteration
        return self._numpy_chunk(buf, n, first, blobs) if self._np else \
            self._tuple_chunk(buf, n, first, blobs)

    @staticmethod
    def _blobs(rec: Record) -> Dict[str, bytes]:
        u = getattr(rec.u, NAMES[rec.kind])
        return {f: ctypes.string_at(getattr(u, f).data, getattr(u, f).len) if getattr(u, f).len else b""
                for f in _BLOBS[rec.kind]}

    def _want(self, kind: int) -> bool:
        return kind in NAMES and (self.kinds is None or NAMES[kind] in self.kinds)

    def _tuple_chunk(self, buf, n, first, blobs) -> Dict[str, List[Any]]:
        out: Dict[str, List[Any]] = {}
        size = ctypes.sizeof(Record)
        mv = memoryview(buf).cast("B")
        kinds = mv.cast("I")
        step = size // 4
        for i in range(n):
            k = kinds[i * step]
            if not self._want(k):
                continue
            low = NAMES[k]
            vals = _UNPACK[k](mv, i * size + _UNION_AT)
            if _BLOBS[k]:  # a blob is (pointer, length) in vals: its bytes
                b = blobs.get(i) or self._blobs(buf[i])
                vals = _with_blobs(k, vals, b)
            out.setdefault(low, []).append(_TUPLES[low](first + i, *vals))
        return out

    def _numpy_chunk(self, buf, n, first, blobs) -> Dict[str, Any]:
        np = self._np
        size = ctypes.sizeof(Record)
        raw = np.frombuffer(buf, dtype=np.uint8, count=n * size).reshape(n, size)
        kinds = raw[:, :4].copy().view(np.uint32).ravel()
        out: Dict[str, Any] = {}
        for k in np.unique(kinds):
            k = int(k)
            if not self._want(k):
                continue
            low = NAMES[k]
            rows = np.nonzero(kinds == k)[0]
            st = _STRUCTS[k]
            names = ["index"] + FIELDS[low]
            formats = ["u8"] + [("O" if f in _BLOBS[k] else
                                 ("i8" if getattr(st, f).size == 8 and
                                  dict(st._fields_)[f] is ctypes.c_int64 else "u8"))
                                for f in FIELDS[low]]
            arr = np.empty(len(rows), dtype=list(zip(names, formats)))
            arr["index"] = rows + first
            sub = raw[rows]
            for f, fmt in zip(FIELDS[low], formats[1:]):
                if fmt == "O":
                    arr[f] = [(blobs.get(int(i)) or self._blobs(buf[int(i)]))[f] for i in rows]
                else:
                    at = _UNION_AT + getattr(st, f).offset
                    arr[f] = sub[:, at:at + 8].copy().view(fmt).ravel()
            out[low] = arr
        return out

    def to_pandas(self, kind: Optional[str] = None) -> Any:
        """The remaining records of one kind as a pandas DataFrame (all of
        them in memory), with ``<field>_text`` columns for string ids.
        ``kind`` may be left out when ``records(..., kinds=[...])`` named
        one kind (a kind it did not name gives a frame without rows).
        Columns and dtypes are the kind's, whether the frame has rows or
        not (none left, none of that kind, or numpy=False): ``index`` and
        the uint64_t fields uint64, the int64_t fields int64, blobs object,
        ``<field>_text`` what pandas gives a column of str.
        (Annotated Any: pandas is optional.)"""
        if kind is None:
            if not self.kinds or len(self.kinds) != 1:
                raise UsageError(REPORT_E_USAGE,
                                 "to_pandas() needs a kind unless records() "
                                 "was given one kind (kinds=[...])")
            kind = next(iter(self.kinds))
        import pandas as pd
        if kind not in NUMS:
            raise UsageError(REPORT_E_USAGE, f"unknown record kind {kind!r}")
        parts = [chunk[kind] for chunk in self if kind in chunk]
        dtypes = _pandas_dtypes(kind)
        if parts:
            df = pd.concat([pd.DataFrame(p) for p in parts], ignore_index=True)
            # named tuples: pandas infers int64 (or object) from Python ints
            other = {c: t for c, t in dtypes.items() if df[c].dtype != t}
            if other:
                df = df.astype(other)
        else:
            df = pd.DataFrame({c: pd.Series(dtype=t) for c, t in dtypes.items()},
                              index=pd.RangeIndex(0))
        text = pd.Series([""]).dtype  # object, or str where pandas infers it
        for f in STRING_FIELDS:
            if f in FIELDS[kind]:
                df[f + "_text"] = pd.Series([self.string(v) for v in df[f]], dtype=text,
                                            index=df.index)
        return df

    def close(self) -> None:
        """Closes the trace (waiting for a call in progress in another
        thread); later calls raise UsageError."""
        with self._lock:
            if self._r:
                _native.trace_lib().gpuphase_reader_close(self._r)
                self._r = None

    def __enter__(self) -> "Records":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


sorted_ = sorted


def records(path: PathLike, kinds: Optional[Iterable[str]] = None, chunk_size: int = 65536,
            sorted: bool = False, numpy: Optional[bool] = None) -> Records:
    """Streams the records of one trace in chunks (see Records): kinds
    limits them to some kinds ('kernel', 'api', ...); sorted=True gives them
    in time order (gpuphase-report dump --sorted); numpy=False asks for named
    tuples even when NumPy is installed. Raises TraceError when the file
    cannot be read, with the reader's code."""
    return Records(path, kinds=kinds, chunk_size=chunk_size, sorted=sorted, numpy=numpy)
