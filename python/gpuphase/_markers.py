"""gpuphase.range() and gpuphase.step(): phases and steps marked from Python
through the C phase API (include/gpuphase/gpuphase.h) of the preloaded
libgpuphase.so, looked up in the process's global scope. Without the
preload they do nothing (and cost an attribute lookup)."""
import ctypes
import functools
import inspect
import operator
import sys
from typing import Any, Callable, Generator, Iterator, Optional, TypeVar

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
    ``report(step=...)``) the steps. Names are cut to 255 bytes, before a
    character that would not fit whole; a name with a NUL character is a
    ValueError. A range opened before the process's first CUDA call and
    still open then is recorded from its own start; one closed before it
    is not.

    A decorated function is timed call by call. A decorated generator
    function, coroutine function (``async def``) or asynchronous generator
    function is timed step by step, as ranges must nest on a thread: each
    time its body runs (``next()``, ``send()``, ``throw()``, ``close()``,
    a step of the event loop) is one range, closed where the body gives
    control back (``yield``, an ``await`` that suspends, ``return``, an
    exception). The wrapper is of the same kind as the function
    (``inspect.isgeneratorfunction`` and the like say so)."""

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
        rng = self
        if inspect.isasyncgenfunction(fn):
            @functools.wraps(fn)
            async def wrapped_agen(*args: Any, **kwargs: Any) -> Any:
                agen = fn(*args, **kwargs)
                # agen is kept from the event loop's asyncgen hooks: the loop
                # knows this wrapper, which closes agen (at the loop's
                # shutdown both would be closed at once)
                hooks = sys.get_asyncgen_hooks()
                sys.set_asyncgen_hooks(firstiter=None, finalizer=None)
                try:
                    aw = agen.asend(None)
                finally:
                    sys.set_asyncgen_hooks(firstiter=hooks.firstiter, finalizer=hooks.finalizer)
                while True:
                    try:
                        out = await _Awaiting(_steps(aw.__await__(), rng))
                    except StopAsyncIteration:
                        return
                    try:
                        sent = yield out
                    except GeneratorExit:
                        await _Awaiting(_steps(agen.aclose().__await__(), rng))
                        raise
                    except BaseException as e:  # noqa: BLE001 - athrow: passed on
                        aw = agen.athrow(e)
                    else:
                        aw = agen.asend(sent)
            return wrapped_agen  # type: ignore[return-value]
        if inspect.iscoroutinefunction(fn):
            @functools.wraps(fn)
            async def wrapped_coro(*args: Any, **kwargs: Any) -> Any:
                return await _Awaiting(_steps(fn(*args, **kwargs).__await__(), rng))
            return wrapped_coro  # type: ignore[return-value]
        if inspect.isgeneratorfunction(fn):
            @functools.wraps(fn)
            def wrapped_gen(*args: Any, **kwargs: Any) -> Any:
                return (yield from _steps(fn(*args, **kwargs), rng))
            return wrapped_gen  # type: ignore[return-value]

        @functools.wraps(fn)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with rng:
                return fn(*args, **kwargs)
        return wrapped  # type: ignore[return-value]


def _steps(it: Iterator[Any], rng: range) -> Generator[Any, Any, Any]:
    """``yield from it`` (a generator, or a coroutine's or an asynchronous
    generator's awaitable) with each step of it inside rng: the range is
    entered before each next()/send()/throw()/close() of it and exited when
    that returns or raises, so it is never open while the caller runs."""
    arg: Any = None
    thrown: Optional[BaseException] = None
    while True:
        try:
            with rng:
                if thrown is not None:
                    out = _throw(it, thrown)
                elif arg is None:
                    out = next(it)
                else:
                    out = it.send(arg)  # type: ignore[attr-defined]
        except StopIteration as e:
            return e.value
        finally:
            thrown = None  # no cycle through this frame's traceback
        try:
            arg = yield out
        except GeneratorExit:
            close = getattr(it, "close", None)
            if close is not None:
                with rng:
                    close()
            raise
        except BaseException as e:  # noqa: BLE001 - thrown in: passed on
            arg, thrown = None, e


def _throw(it: Iterator[Any], exc: BaseException) -> Any:
    """it.throw(exc); as yield from does, an iterator without throw() is
    closed and exc raised."""
    throw = getattr(it, "throw", None)
    if throw is None:
        close = getattr(it, "close", None)
        if close is not None:
            close()
        raise exc
    return throw(exc)


class _Awaiting:
    """An awaitable over an iterator (_steps), so that a coroutine can await it."""

    __slots__ = ("_it",)

    def __init__(self, it: Generator[Any, Any, Any]):
        self._it = it

    def __await__(self) -> Generator[Any, Any, Any]:
        return self._it


def step(items: Optional[int] = None) -> range:
    """Marks one step of the loop: ``with gpuphase.step(items=batch_size):``
    opens a range named "step" (a report finds it as the steps, or give
    ``report(step="step")``) and counts ``items`` (samples, tokens) for the
    report's throughput per step.

    As a decorator (``@gpuphase.step(items=32)``) it makes each call of a
    function one step. A generator function, coroutine function or
    asynchronous generator function is refused (TypeError): its body runs
    in pieces between yields or awaits, which are not steps; open the step
    in the loop instead, or time the pieces with gpuphase.range(name)."""
    return _Step(None if items is None else _count(items))


def _count(n: Any) -> int:
    """A count of items: a whole number (NumPy's and PyTorch's too, or a
    float without a fraction) from 0 to 2**64 - 1."""
    try:
        if isinstance(n, bool):  # True is no count
            raise TypeError
        v = int(n) if isinstance(n, float) and n.is_integer() else operator.index(n)
    except TypeError:
        raise TypeError(f"items is a whole number, not {n!r}") from None
    if v < 0 or v >= 1 << 64:
        raise ValueError(f"items must be >= 0 and < 2**64, not {n!r}")
    return v


class _Step(range):
    __slots__ = ("items",)

    def __init__(self, items: Optional[int]):
        super().__init__("step")
        self.items = items

    def __enter__(self) -> "range":
        api = _lookup()
        if api:
            api[0](self._b)
            if self.items is not None:
                api[2](self.items)
        return self

    def __call__(self, fn: F) -> F:
        for test, what in ((inspect.isasyncgenfunction, "an asynchronous generator function"),
                           (inspect.iscoroutinefunction, "a coroutine function"),
                           (inspect.isgeneratorfunction, "a generator function")):
            if test(fn):
                raise TypeError(
                    f"gpuphase.step() cannot decorate {what} "
                    f"({getattr(fn, '__qualname__', fn)!r}): its body runs in pieces between "
                    "yields or awaits, which are not steps; open the step with "
                    "'with gpuphase.step():' in the loop, or time the pieces with "
                    "@gpuphase.range(name)")
        return super().__call__(fn)


def items(n: int) -> None:
    """Counts n items (samples, tokens, frames) for the step under way
    (gpuphase_step_items): items counted on any thread while a step is open
    are that step's; counts add up."""
    v = _count(n)
    api = _lookup()
    if api:
        api[2](v)
