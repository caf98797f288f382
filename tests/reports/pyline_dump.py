"""Line tables of this interpreter, with the line of every code unit as
the interpreter's own Python-level API says it (co_lines() from 3.10;
dis.findlinestarts over co_lnotab in 3.9), for test_pyline.c.
Output, one code object per line:
  PY_VERSION_HEX FIRST_LINE TABLE_HEX UNITS LINE_OF_UNIT_0,LINE_OF_UNIT_1,...
(a unit without a line gets FIRST_LINE, as gp_pyline answers).
Runs under any CPython 3.9+; the code compiled is SAMPLE below and this file."""
import dis
import sys

SAMPLE = '''
import os
def f(a, b=2, *args, **kw):
    x = [i * 2
         for i in range(a)
         if i % 3]
    try:
        y = {k: v for k, v in kw.items()}
    except (KeyError,
            ValueError) as e:
        raise RuntimeError("bad") from e
    finally:
        pass
    while a > 0:
        a -= 1
        if a == 5:
            continue
        elif a == 7:
            break
    else:
        a = -1
    with open(os.devnull) as fh:
        fh.read()
    g = (lambda q:
         q + 1)
    return (x,
            y,
            g(a))

class C:
    @staticmethod
    def s(): return 1
    def m(self):
        async def inner():
            await self.x
        def gen():
            yield from range(3)
            yield 4
        return inner, gen

''' + "\n" * 300 + '''
def far_away(v):
    return [v
            for _ in range(2)]
'''


def codes(co):
    yield co
    for c in co.co_consts:
        if hasattr(c, "co_code"):
            yield from codes(c)


def unit_lines(co):
    n = len(co.co_code) // 2
    first = co.co_firstlineno
    lines = [first] * n
    if hasattr(co, "co_lines"):
        for start, end, line in co.co_lines():
            for b in range(start, end, 2):
                if b // 2 < n:
                    lines[b // 2] = first if line is None else line
    else:
        starts = sorted(dis.findlinestarts(co))
        j, cur = 0, first
        for u in range(n):
            while j < len(starts) and starts[j][0] <= 2 * u:
                cur = starts[j][1]
                j += 1
            lines[u] = cur
    return lines


def main():
    out = []
    with open(__file__) as f:
        own = f.read()
    for src, name in ((SAMPLE, "<sample>"), (own, __file__)):
        for co in codes(compile(src, name, "exec")):
            tab = co.co_lnotab if sys.version_info < (3, 10) else co.co_linetable
            lines = unit_lines(co)
            out.append("%d %d %s %d %s" % (sys.hexversion, co.co_firstlineno, tab.hex() or "-",
                                         len(lines), ",".join(map(str, lines)) or "-"))
    sys.stdout.write("\n".join(out) + "\n")


main()
