#!/usr/bin/env python3
"""check_sizes.py ROOT — the size gate of the program folders' sources (common/, libpcm/, pcmd/
and every other top-level folder of C/C++ sources but tests/, examples/, bench/ and the
bindings). It fails when
  - a file is over 600 lines;
  - a function (lambdas inside it included) is over 120 lines;
  - a class (or struct) has its member functions defined in more than 2 files, not counting the
    header that declares it (members defined in the class body are part of the declaration);
  - a class has more than 40 member functions (each overload counts; constructors too).
Every violation is printed, the largest first. ALLOWED lists violations known and being worked
on: they are printed as such and do not fail the gate (an entry that no longer matches is
reported, so that it can go).

Functions and their scopes are found with universal-ctags (its end line and scope fields): without
it, the gate prints SKIPPED with the reason and exits 77 (ctest: skipped).
"""
import collections
import pathlib
import shutil
import subprocess
import sys

MAX_FILE, MAX_FUNCTION = 600, 120
MAX_CLASS_FILES, MAX_CLASS_MEMBERS = 2, 40
# Top-level folders that are not a program's or a library's sources.
NOT_PROGRAMS = {"tests", "examples", "bench", "fortran", "python", "docs", "scripts", "cmake",
                "include"}
SUFFIXES = {".c", ".cc", ".cpp", ".h", ".hpp"}

# (folder, class, rule) -> why it is allowed for now. rule: "files" or "members".
ALLOWED = {}


def program_folders(root: pathlib.Path) -> list:
    return sorted(d for d in root.iterdir()
                  if d.is_dir() and not d.name.startswith((".", "build")) and
                  d.name not in NOT_PROGRAMS and
                  any(p.suffix in SUFFIXES for p in d.rglob("*")))


def run_ctags(ctags: str, files: list) -> list:
    """One row per tag: (path, line, end, kind, scope kind, scope, name, signature)."""
    out = subprocess.run(
        [ctags, "-x",
         "--_xformat=%{input}\t%{line}\t%{end}\t%{kind}\t%{scopeKind}\t%{scope}\t%{name}\t"
         "%{signature}",
         "--kinds-c++=fcsun", "--kinds-c=fsu", "--fields=+neSZ", "--languages=C,C++",
         "--map-C++=+.h", *map(str, files)],
        capture_output=True, text=True, check=True).stdout
    rows = []
    for line in out.splitlines():
        parts = line.split("\t")
        if len(parts) != 8 or not parts[1].isdigit():
            continue
        path, start, end, kind, scope_kind, scope, name, sig = parts
        scope = "" if scope == "-" else scope
        rows.append((pathlib.Path(path), int(start), int(end) if end.isdigit() else int(start),
                     kind, scope_kind, scope, name, sig))
    return rows


def class_violations(rows: list, root: pathlib.Path) -> list:
    """(folder, class, rule, text) for each class over a limit."""
    def full(scope, name):
        return f"{scope}::{name}" if scope else name

    namespaces = {full(s, n) for _, _, _, k, _, s, n, _ in rows if k == "namespace"}
    declared = collections.defaultdict(set)  # (folder, class) -> files declaring it
    members = collections.defaultdict(dict)  # (folder, class) -> {(name, signature): path}
    for path, _, _, kind, scope_kind, scope, name, sig in rows:
        folder = path.relative_to(root).parts[0]
        if kind in ("class", "struct", "union"):
            declared[(folder, full(scope, name))].add(path)
        elif (kind == "function" and scope and scope_kind in ("class", "struct", "union") and
              scope not in namespaces and not name.startswith("__anon")):
            members[(folder, scope)].setdefault((name, sig), path)
    found = []
    for (folder, cls), defs in members.items():
        files = {p for p in defs.values() if p not in declared.get((folder, cls), set())}
        if len(files) > MAX_CLASS_FILES:
            where = ", ".join(sorted(str(p.relative_to(root)) for p in files))
            found.append((folder, cls, "files",
                          f"{cls} ({folder}/): member functions defined in {len(files)} files "
                          f"(at most {MAX_CLASS_FILES} besides its header): {where}"))
        if len(defs) > MAX_CLASS_MEMBERS:
            found.append((folder, cls, "members",
                          f"{cls} ({folder}/): {len(defs)} member functions "
                          f"(at most {MAX_CLASS_MEMBERS})"))
    return sorted(found)


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    ctags = shutil.which("ctags")
    if ctags is None:
        print("SKIPPED: universal-ctags is not installed (Debian: universal-ctags)")
        return 77
    version = subprocess.run([ctags, "--version"], capture_output=True, text=True).stdout
    if "Universal Ctags" not in version:
        print(f"SKIPPED: {ctags} is not universal-ctags (Debian: universal-ctags), which gives "
              "each function's end and scope")
        return 77
    folders = program_folders(root)
    files = sorted(p for d in folders for p in d.rglob("*") if p.suffix in SUFFIXES)
    if not files:
        print(f"no sources under {root}")
        return 1
    print("folders:", " ".join(d.name + "/" for d in folders))
    bad = []
    sizes = sorted(((sum(1 for _ in p.open(errors="replace")), p) for p in files), reverse=True)
    for n, p in sizes:
        if n > MAX_FILE:
            bad.append(f"{p.relative_to(root)}: {n} lines (at most {MAX_FILE})")
    rows = run_ctags(ctags, files)
    functions = sorted(((end - start + 1, path, start, f"{scope}::{name}")
                        for path, start, end, kind, _, scope, name, _ in rows
                        if kind == "function"), reverse=True)
    if not functions:
        print("ctags found no functions: is it universal-ctags?")
        return 1
    for n, p, start, name in functions:
        if n > MAX_FUNCTION:
            bad.append(f"{p.relative_to(root)}:{start} {name.lstrip(':')}: {n} lines "
                       f"(at most {MAX_FUNCTION})")
    allowed, matched = [], set()
    for folder, cls, rule, text in class_violations(rows, root):
        key = (folder, cls, rule)
        if key in ALLOWED:
            matched.add(key)
            allowed.append(f"{text} [allowed: {ALLOWED[key]}]")
        else:
            bad.append(text)
    n, p = sizes[0]
    print(f"largest file: {p.relative_to(root)} ({n} lines) of {len(files)}")
    n, p, start, name = functions[0]
    print(f"longest function: {p.relative_to(root)}:{start} {name.lstrip(':')} ({n} lines) "
          f"of {len(functions)}")
    for a in allowed:
        print("too large, allowed for now:", a)
    for key in sorted(set(ALLOWED) - matched):
        print("allow-list entry no longer needed:", " ".join(key))
    for b in bad:
        print("too large:", b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
