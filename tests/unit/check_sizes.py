#!/usr/bin/env python3
"""check_sizes.py ROOT — fails when a source file of libpcm/, pcmd/, pcmctl/, relay/ or common/ is
over 600 lines or one of their functions (lambdas inside it included) is over 120 lines; prints the
largest of each.

Functions are found with universal-ctags (its end line field). Exit 77 (skipped) without it.
"""
import pathlib
import shutil
import subprocess
import sys

MAX_FILE, MAX_FUNCTION = 600, 120
DIRS = ("libpcm", "pcmd", "pcmctl", "relay", "common")
SUFFIXES = {".c", ".cc", ".cpp", ".h", ".hpp"}


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    ctags = shutil.which("ctags")
    if ctags is None:
        print("SKIPPED: universal-ctags is not installed (Debian: universal-ctags)")
        return 77
    files = sorted(p for d in DIRS for p in (root / d).rglob("*") if p.suffix in SUFFIXES)
    if not files:
        print(f"no sources under {root}/{{{','.join(DIRS)}}}")
        return 1
    bad = []
    sizes = sorted(((sum(1 for _ in p.open(errors="replace")), p) for p in files), reverse=True)
    for n, p in sizes:
        if n > MAX_FILE:
            bad.append(f"{p.relative_to(root)}: {n} lines (at most {MAX_FILE})")
    out = subprocess.run(
        [ctags, "-x", "--_xformat=%{input}\t%{line}\t%{end}\t%{scope}::%{name}",
         "--kinds-c++=f", "--kinds-c=f", "--fields=+ne", "--languages=C,C++",
         "--map-C++=+.h", *map(str, files)],
        capture_output=True, text=True, check=True).stdout
    functions = []
    for line in out.splitlines():
        parts = line.split("\t")
        if len(parts) != 4 or not parts[1].isdigit() or not parts[2].isdigit():
            continue
        path, start, end, name = parts
        functions.append((int(end) - int(start) + 1, pathlib.Path(path), int(start), name))
    if not functions:
        print("ctags found no functions: is it universal-ctags?")
        return 1
    functions.sort(reverse=True)
    for n, p, start, name in functions:
        if n > MAX_FUNCTION:
            bad.append(f"{p.relative_to(root)}:{start} {name.lstrip(':')}: {n} lines "
                       f"(at most {MAX_FUNCTION})")
    n, p = sizes[0]
    print(f"largest file: {p.relative_to(root)} ({n} lines) of {len(files)}")
    n, p, start, name = functions[0]
    print(f"longest function: {p.relative_to(root)}:{start} {name.lstrip(':')} ({n} lines) "
          f"of {len(functions)}")
    for b in bad:
        print("too large:", b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
