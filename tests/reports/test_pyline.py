"""gp_pyline against a real interpreter: pyline_dump.py dumps that
interpreter's line tables with the line of every code unit as its own
co_lines()/dis says, and test_pyline checks each (and each table cut short).
  test_pyline.py VERSION TEST_PYLINE
VERSION: 3.9 ... 3.14, or "system" (/usr/bin/python3). Exit 77 (skipped)
when that interpreter is not installed."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from findpython import find_python  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    version, checker = sys.argv[1], sys.argv[2]
    py = find_python(version)
    if not py:
        print("skip: no Python", version)
        sys.exit(77)
    with tempfile.TemporaryDirectory() as d:
        dump = os.path.join(d, "tables.txt")
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        with open(dump, "w") as f:
            p = subprocess.run([py, os.path.join(HERE, "pyline_dump.py")], stdout=f,
                               env=env, timeout=60)
        if p.returncode:
            print("FAIL: pyline_dump.py under", py, "exited", p.returncode)
            sys.exit(1)
        p = subprocess.run([checker, dump], timeout=60)
        print(py)
        sys.exit(1 if p.returncode else 0)


main()
