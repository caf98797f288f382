"""gp_pyline against a real interpreter: pyline_dump.py dumps that
interpreter's line tables with the line of every code unit as its own
co_lines()/dis says, and test_pyline checks each (and each table cut short).
  test_pyline.py VERSION TEST_PYLINE
VERSION: 3.9 ... 3.14, or "system" (/usr/bin/python3). Exit 77 (skipped)
when that interpreter is not installed."""
import glob
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def find_python(version):
    if version == "system":
        return "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else None
    name = "python" + version
    cands = []
    w = shutil.which(name)
    if w and "/shims/" not in w:  # pyenv's shims may point nowhere
        cands.append(w)
    cands.append("/usr/bin/" + name)
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    cands += sorted(glob.glob(os.path.join(root, "versions", version + ".*", "bin", name)))
    for c in cands:
        if os.path.exists(c) and os.access(c, os.X_OK):
            return c
    return None


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
