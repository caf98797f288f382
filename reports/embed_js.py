#!/usr/bin/env python3
"""Turns a JavaScript source into a C header holding it as one string:
  embed_js.py INPUT OUTPUT SYMBOL
The script goes into an HTML <script> element as is, so it must not hold
'</script' or '<!--' (either would end or change the element): refused."""
import sys

src, out, sym = sys.argv[1:4]
with open(src, encoding="utf-8") as f:
    text = f.read()
low = text.lower()
for bad in ("</script", "<!--"):
    if bad in low:
        sys.exit(f"embed_js.py: {src} holds {bad!r}, which would break the page")
lines = []
for line in text.splitlines(keepends=True):
    esc = line.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    esc = esc.replace("?", "\\?")  # no trigraphs
    lines.append('  "' + esc + '"')
with open(out, "w", encoding="utf-8") as f:
    f.write(f"/* Generated from {src.split('/')[-1]} by embed_js.py: do not edit. */\n")
    f.write(f"static const char {sym}[] =\n")
    f.write("\n".join(lines) if lines else '  ""')
    f.write(";\n")
