"""Writes gpuphase/_records.py, the record kinds and their fields, from the
one table that declares them (include/gpuphase/trace_records.h), so that
the Python structures follow the C ones without being copied by hand.

usage: gen_records.py trace_records.h OUTPUT"""
import re
import sys


def parse(text):
    text = text.replace("\\\n", " ")
    fields = {}
    for m in re.finditer(r"#define\s+(GPUPHASE_FIELDS_\w+)\(F\)(.*)", text):
        fields[m.group(1)] = re.findall(r"F\((\w),\s*(\w+),\s*(\w+)\)", m.group(2))
    kinds = re.search(r"#define\s+GPUPHASE_RECORD_KINDS\(X\)(.*)", text).group(1)
    out = []
    for num, _up, low, fname in re.findall(r"X\((\d+),\s*(\w+),\s*(\w+),\s*(\w+)\)", kinds):
        out.append((int(num), low, [(name, coding, ctype) for coding, ctype, name in fields[fname]]))
    if not out or any(not f for _, _, f in out):
        raise SystemExit(f"{sys.argv[1]}: no record kinds found")
    return out


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        kinds = parse(f.read())
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        f.write("# Generated from include/gpuphase/trace_records.h by gen_records.py.\n")
        f.write("# (number, name, [(field, code, C type), ...]); the code is V for a\n")
        f.write("# value, E for an end time, B for a blob (docs/format.md).\n")
        f.write("KINDS = [\n")
        for num, low, flds in kinds:
            f.write(f"    ({num}, {low!r}, {flds!r}),\n")
        f.write("]\n")


if __name__ == "__main__":
    main()
