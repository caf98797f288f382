"""gpuphase.range() and gpuphase.step(): phases and steps marked from Python
through the C phase API (include/gpuphase/gpuphase.h) of the preloaded
libgpuphase.so, looked up in the process's global scope. Without the
preload they do nothing (and cost an attribute lookup)."""
import ctypes
import functools
import operator
from typing import Any, Callable, Optional, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

_api = None  # (push, pop, items) or () once looked up


def _lookup():
    global _api
    if _api is None:
        try:
            g = ctypes.CDLL(None)  # RTLD_DEFAULT: the preloaded library first
            push, pop, items = g.gpuphase_range_push, g.gpuphase_range_pop, g.gpuphase_step_items
            push.argtypes, push.restype = [ctypes.c_char_p], ctypes.c_int
            pop.argtypes, pop.restype = [], ctypes.c_int
            items.argtypes, items.restype = [ctypes.c_uint64], ctypes.c_int
            _api = (push, pop, items)
        except (OSError, AttributeError):
            _api = ()
    return _api


def preloaded() -> bool:
    """True when libgpuphase is preloaded (gpuphase run, LD_PRELOAD), so that
    ranges and steps are recorded."""
    return bool(_lookup())


class range:  # noqa: N801 - named like the C API's ranges
    """A phase named ``name`` on the calling thread, as a context manager
    (``with gpuphase.range("forward"): ...``) or a decorator
    (``@gpuphase.range("load")``). Ranges nest; each becomes a phase of the
    report, and a repeating top-level one (or the one given to
    ``report(step=...)``) the steps. Names are cut to 255 bytes; a name
    with a NUL character is a ValueError. Ranges opened before the
    process's first CUDA call are not recorded."""

    __slots__ = ("name", "_b")

    def __init__(self, name: str):
        if not isinstance(name, str):
            raise TypeError(f"a range's name is a str, not {type(name).__name__}")
        if "\0" in name:
            # as Python refuses a NUL in a path: the C name would end there
            raise ValueError(f"embedded null character in a range's name: {name!r}")
        self.name = name
        self._b = name.encode("utf-8", "replace")

    def __enter__(self) -> "range":
        api = _lookup()
        if api:
            api[0](self._b)
        return self

    def __exit__(self, *exc: Any) -> None:
        api = _lookup()
        if api:
            api[1]()

    def __call__(self, fn: F) -> F:
        @functools.wraps(fn)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with self:
                return fn(*args, **kwargs)
        return wrapped  # type: ignore[return-value]


def step(items: Optional[int] = None) -> range:
    """Marks one step of the loop: ``with gpuphase.step(items=batch_size):``
    opens a range named "step" (a report finds it as the steps, or give
    ``report(step="step")``) and counts ``items`` (samples, tokens) for the
    report's throughput per step."""
    if items is None:
        return range("step")
    return _Step(_count(items))


def _count(n: Any) -> int:
    """A count of items: a whole number (NumPy's and PyTorch's too, or a
    float without a fraction) from 0 to 2**64 - 1."""
    try:
        v = int(n) if isinstance(n, float) and n.is_integer() else operator.index(n)
    except TypeError:
        raise TypeError(f"items is a whole number, not {n!r}") from None
    if v < 0 or v >= 1 << 64:
        raise ValueError(f"items must be >= 0 and < 2**64, not {n!r}")
    return v


class _Step(range):
    __slots__ = ("items",)

    def __init__(self, items: int):
        super().__init__("step")
        self.items = items

    def __enter__(self) -> "range":
        api = _lookup()
        if api:
            api[0](self._b)
            api[2](self.items)
        return self


def items(n: int) -> None:
    """Counts n items (samples, tokens, frames) for the step under way
    (gpuphase_step_items): items counted on any thread while a step is open
    are that step's; counts add up."""
    v = _count(n)
    api = _lookup()
    if api:
        api[2](v)
