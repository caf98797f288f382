"""gpuphase.report() and gpuphase.compare(): gpuphase-report's report and CI
gate computed by libgpuphase-report in memory. The output is the command
line's, byte for byte, for the same options."""
import ctypes
import glob
import html as _html
import json as _json
import operator
import os
import re
import threading
from typing import Any, Dict, Iterable, List, Optional, Sequence, Union

from . import _native
from ._errors import REPORT_E_USAGE, UsageError, TraceError, report_error, warn

PathLike = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]
Paths = Union[PathLike, Iterable[PathLike]]

_ERRLEN = 1024
_compare_lock = threading.Lock()  # the gate parses its arguments with getopt
# what gpuphase_report_render takes (reports/render.c's renderers)
FORMATS = ("text", "json", "html", "folded")


def fs_path(p: Any) -> str:
    """One path as a str, checked as open() checks it: a TypeError for what
    is not a path, a ValueError for an embedded NUL (which C would cut)."""
    if not isinstance(p, (str, bytes, os.PathLike)):
        raise TypeError(f"expected a path (str, bytes or os.PathLike), not {type(p).__name__}")
    p = os.fsdecode(os.fspath(p))
    if "\0" in p:
        raise ValueError(f"embedded null byte in the path {p!r}")
    return p


def expand(paths: Paths) -> List[str]:
    """File names from a path, a glob ('gpuphase-*.gph') or a list of them."""
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    elif not isinstance(paths, Iterable):
        raise TypeError("expected a path, a glob or a list of them, not "
                        f"{type(paths).__name__}")
    out: List[str] = []
    for p in paths:
        p = fs_path(p)
        if glob.has_magic(p) and not os.path.exists(p):
            found = sorted(glob.glob(p))
            if not found:
                raise TraceError(1, f"{p}: no file matches")
            out.extend(found)
        else:
            out.append(p)
    if not out:
        raise UsageError(REPORT_E_USAGE, "no trace file given")
    return out


def _check(code: int, err: ctypes.Array) -> None:
    if code:
        raise report_error(code, err.value.decode("utf-8", "replace"))


class Report:
    """The report of one or several traces (a parent and its children, the
    ranks of a job: read in parallel, each reported, then added together;
    ranks are also set side by side in the job view, ``data["job"]``).

    ``data`` is the whole JSON report as Python data (docs/report-json.md),
    ``json()`` its text, ``summary()`` the text report, ``html()`` the
    self-contained page; in Jupyter the report shows itself inline.

    One object may be used from several threads: its calls are serialised
    (a lock), and close() waits for a render in progress."""

    def __init__(self, paths: Paths, *, window: Optional[str] = None,
                 step: Optional[str] = None, warmup: Optional[int] = None,
                 top: Optional[int] = None, link_gbps: Optional[float] = None,
                 html_detail: Optional[str] = None, html_budget: Optional[int] = None,
                 job: Optional[bool] = None, comm_kernels: Optional[str] = None,
                 jobs: Optional[int] = None, processes: Union[int, str, None] = None,
                 frames: Optional[str] = None, weight: Optional[str] = None):
        self._lock = threading.RLock()
        self._h: Optional[int] = None
        self.paths = expand(paths)
        lib = _native.report_lib()
        self._cache: Dict[str, str] = {}
        self._data: Any = None
        err = ctypes.create_string_buffer(_ERRLEN)
        opts = lib.gpuphase_report_opts_new()
        if not opts:
            raise MemoryError("out of memory")
        try:
            if job is not None and not isinstance(job, bool):
                raise UsageError(REPORT_E_USAGE, f"invalid job {job!r}: expected True, False or None")
            for name, value in (("window", window), ("step", step), ("warmup", warmup),
                                ("top", top), ("link-gbps", link_gbps),
                                ("html-detail", html_detail), ("html-budget", html_budget),
                                ("job" if job else "no-job", "" if job is not None else None),
                                ("comm-kernels", comm_kernels), ("jobs", jobs),
                                ("processes", processes), ("frames", frames),
                                ("weight", weight)):
                if value is None:
                    continue
                counts = ("warmup", "top", "html-budget", "jobs", "processes")
                if name in counts and not isinstance(value, (bool, str)):
                    try:
                        value = operator.index(value)  # NumPy integers too
                    except TypeError:
                        pass
                texts = ("window", "step", "html-detail", "comm-kernels", "frames", "weight")
                if isinstance(value, bool) or (name in counts and not isinstance(value, int)
                                               and not (name == "processes" and value == "all")) \
                        or (name in texts and not isinstance(value, str)) \
                        or (name == "link-gbps" and not isinstance(value, (int, float))):
                    want = ("a whole number or 'all'" if name == "processes"
                            else "a whole number" if name in counts
                            else "a number (GB/s)" if name == "link-gbps"
                            else "a string")
                    raise UsageError(REPORT_E_USAGE, f"invalid {name} {value!r}: expected {want}")
                _check(lib.gpuphase_report_opts_set(opts, name.encode(), str(value).encode(),
                                                    err, _ERRLEN), err)
            files = _native.cstrings(self.paths)
            code = ctypes.c_int(0)
            self._h = lib.gpuphase_report_open(files, len(self.paths), opts,
                                               ctypes.byref(code), err, _ERRLEN)
            if not self._h:
                _check(code.value or 1, err)
        finally:
            lib.gpuphase_report_opts_free(opts)
        self.truncated = [p for i, p in enumerate(self.paths)
                          if lib.gpuphase_report_truncated(self._h, i)]
        for p in self.truncated:
            warn(f"{p} is truncated: reporting up to its last complete frame")

    def render(self, fmt: str) -> str:
        """The report as 'text', 'json', 'html' or 'folded' (what
        gpuphase-report --format FMT writes, without colour)."""
        if not isinstance(fmt, str):
            raise TypeError(f"the format is a str ({', '.join(FORMATS)}), not {type(fmt).__name__}")
        if fmt not in FORMATS:
            raise UsageError(REPORT_E_USAGE, f"unknown format {fmt!r}: "
                             f"{', '.join(FORMATS[:-1])} or {FORMATS[-1]}")
        with self._lock:
            if fmt not in self._cache:
                if not self._h:
                    raise UsageError(REPORT_E_USAGE, "the report is closed")
                lib = _native.report_lib()
                buf, n = ctypes.c_void_p(), ctypes.c_size_t()
                err = ctypes.create_string_buffer(_ERRLEN)
                _check(lib.gpuphase_report_render(self._h, fmt.encode(), ctypes.byref(buf),
                                                  ctypes.byref(n), err, _ERRLEN), err)
                self._cache[fmt] = _native.take_buffer(buf, n.value).decode("utf-8", "replace")
            return self._cache[fmt]

    def json(self) -> str:
        """The JSON report's text (gpuphase-report --format json)."""
        return self.render("json")

    @property
    def data(self) -> Dict[str, Any]:
        """The JSON report as Python data (docs/report-json.md)."""
        with self._lock:
            if self._data is None:
                self._data = _json.loads(self.json())
            return self._data

    def summary(self) -> str:
        """The text report (gpuphase-report's default output)."""
        return self.render("text")

    def html(self) -> str:
        """The self-contained HTML page (gpuphase-report --format html)."""
        return self.render("html")

    def save(self, path: PathLike, fmt: str = "html") -> None:
        """Writes the report in format fmt to path."""
        text = self.render(fmt)  # first: a bad format leaves path alone
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)

    def _repr_html_(self) -> str:
        # In an iframe: the page's styles and scripts stay out of the notebook.
        return ('<iframe style="width:100%;height:640px;border:0" srcdoc="'
                + _html.escape(self.html(), quote=True) + '"></iframe>')

    def __repr__(self) -> str:
        return f"<gpuphase.Report of {len(self.paths)} trace(s)>"

    def close(self) -> None:
        """Frees the analysis (the rendered outputs stay available; other
        formats raise UsageError). Waits for a render in progress in
        another thread."""
        with self._lock:
            if self._h:
                _native.report_lib().gpuphase_report_close(self._h)
                self._h = None

    def __enter__(self) -> "Report":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


def report(paths: Paths, **options: Any) -> Report:
    """Reads and analyses traces: ``report('gpuphase-*.gph', window='10ms',
    step='train_step', warmup=2, top=20)``. Options mirror gpuphase-report's
    (window, step, warmup, top, link_gbps, html_detail, html_budget: the
    HTML page's timeline, as --html-detail and --html-budget; job=True or
    False: the job view even without ranks, or never, as --job and
    --no-job; comm_kernels, as --comm-kernels; jobs: threads reading the
    traces, as -j; processes: the per-process sections of the text and the
    page, a count or 'all', as --processes; frames: 'user' or 'all', the
    frames call sites keep, as --frames; weight: 'idle' or 'blocked', what
    the folded stacks are weighed by, as --weight). Raises TraceError when a
    trace cannot be read and UsageError for a bad option."""
    return Report(paths, **options)


class Comparison:
    """The verdict of ``gpuphase-report compare`` or ``check``.

    ``exit_code`` is the command's (0 pass, 1 regression or budget
    exceeded, 3 inconclusive), ``verdict`` "pass", "regression" or
    "inconclusive", ``data`` the JSON verdict (docs/compare.md; None when
    another format was asked for), ``output`` the text as written."""

    def __init__(self, output: str, exit_code: int, fmt: str):
        self.output = output
        self.exit_code = exit_code
        self.data: Optional[Dict[str, Any]] = _json.loads(output) if fmt == "json" else None

    @property
    def verdict(self) -> Optional[str]:
        return self.data.get("verdict") if self.data else None

    @property
    def passed(self) -> bool:
        return self.exit_code == 0

    def __repr__(self) -> str:
        return f"<gpuphase.Comparison {self.verdict or ''} exit_code={self.exit_code}>"


# gpuphase-report compare and check's long options (tools/report_compare.c):
# True for those that take a value. A keyword argument names one as getopt
# does: its whole name or a prefix of one only.
_GATE_OPTIONS = {
    "vs": False, "format": True, "output": True, "junit": True, "max-slowdown": True,
    "min-delta": True, "noise-floor": True, "exact": True, "budget": True, "budgets": True,
    "inconclusive": True, "allow-different-devices": False, "step": True, "warmup": True,
    "top": True, "resamples": True, "seed": True, "jobs": True, "help": False,
}
# what would write the verdict elsewhere or replace it: the result is in memory
_REFUSED = {
    "output": "the verdict is returned (Comparison.output), not written to a file",
    "help": "the usage is gpuphase-report's (gpuphase-report {command} --help)",
    "format": "give format= by its whole name",
}
_OPTION_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")


def _gate_option(flag: str) -> Optional[str]:
    """The long option that --flag names for getopt_long (its whole name,
    or a prefix of one option only), None when unknown or ambiguous."""
    if flag in _GATE_OPTIONS:
        return flag
    found = [name for name in _GATE_OPTIONS if name.startswith(flag)]
    return found[0] if len(found) == 1 else None


def _flags(command: str, options: Dict[str, Any]) -> List[str]:
    """Keyword arguments as command-line options: max_slowdown='5%' ->
    --max-slowdown=5%, allow_different_devices=True -> the flag, a list ->
    the option once per item, None (and False for a flag) -> left out.
    Refused before the C call: a keyword that cannot name an option, one that
    would write the verdict elsewhere or replace it (output, help, a
    format= abbreviated), True or False for an option that takes a value
    (getopt would take the next argument as its value)."""
    out = []
    for key, value in options.items():
        if not isinstance(key, str) or not _OPTION_NAME.fullmatch(key):
            raise UsageError(REPORT_E_USAGE, f"unknown option {key!r}")
        flag = key.replace("_", "-")
        name = _gate_option(flag)
        for v in value if isinstance(value, (list, tuple)) else [value]:
            if v is None:
                continue
            if name in _REFUSED:
                raise UsageError(REPORT_E_USAGE, f"option {key!r} (--{name}) is refused by "
                                 f"{command}(): " + _REFUSED[name].format(command=command))
            if name and _GATE_OPTIONS[name] and isinstance(v, bool):
                raise UsageError(REPORT_E_USAGE, f"invalid {key} {v!r}: --{name} takes a value, "
                                 "not True or False")
            if v is False:
                continue
            if isinstance(v, os.PathLike):
                v = os.fspath(v)
            if not isinstance(v, (bool, str, int, float)):
                # str() of a list or of bytes would be taken as the value
                raise UsageError(REPORT_E_USAGE, f"invalid {key} {v!r}: expected a string or a "
                                 "number (a list or tuple repeats the option)")
            out.append("--" + flag if v is True else f"--{flag}={v}")
    return out


def _safe_paths(paths: List[str]) -> List[str]:
    """Paths as getopt arguments: a relative one that starts with '-'
    (an option to getopt) as ./-NAME."""
    return ["./" + p if p.startswith("-") else p for p in paths]


def _gate(command: str, args: Sequence[str], fmt: str) -> Comparison:
    lib = _native.report_lib()
    argv = _native.cstrings(list(args) + [f"--format={fmt}"])
    buf, n = ctypes.c_void_p(), ctypes.c_size_t()
    exit_code = ctypes.c_int(2)
    err = ctypes.create_string_buffer(_ERRLEN)
    with _compare_lock:
        code = lib.gpuphase_report_compare(command.encode(), argv, len(args) + 1,
                                           ctypes.byref(buf), ctypes.byref(n),
                                           ctypes.byref(exit_code), err, _ERRLEN)
    _check(code, err)
    return Comparison(_native.take_buffer(buf, n.value).decode("utf-8", "replace"),
                      exit_code.value, fmt)


def _paths(paths: Paths) -> List[str]:
    return _safe_paths(expand(paths))


def compare(base: Paths, new: Paths, *, format: str = "json", **options: Any) -> Comparison:
    """gpuphase-report compare BASE... --vs NEW...: options as on the command
    line with underscores (max_slowdown='5%', min_delta='1ms', exact='all',
    budget=['host_wait<=20%'], step=..., warmup=..., seed=...)."""
    args = _paths(base) + ["--vs"] + _paths(new) + _flags("compare", options)
    return _gate("compare", args, format)


def check(new: Paths, *, format: str = "json", **options: Any) -> Comparison:
    """gpuphase-report check: budgets on runs without a baseline, e.g.
    ``check(files, budget=['host_wait<=20%', 'step_p95<=120ms'])``."""
    args = _paths(new) + _flags("check", options)
    return _gate("check", args, format)
