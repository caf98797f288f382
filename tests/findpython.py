"""The CPython interpreters the tests run under (the Python frame reader's
and the line-table decoder's): Debian's python3 ("system") or one of a
given minor version, from PATH (not pyenv's shims, which may point
nowhere), /usr/bin or a pyenv tree."""
import glob
import os
import shutil


def find_python(version):
    """The path of python VERSION ("3.12", ..., or "system"), or None."""
    if version == "system":
        return "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else None
    name = "python" + version
    cands = []
    w = shutil.which(name)
    if w and "/shims/" not in w:
        cands.append(w)
    cands.append("/usr/bin/" + name)
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    cands += sorted(glob.glob(os.path.join(root, "versions", version + ".*", "bin", name)))
    for c in cands:
        if os.path.exists(c) and os.access(c, os.X_OK):
            return c
    return None
