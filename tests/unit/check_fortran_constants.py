#!/usr/bin/env python3
"""check_fortran_constants.py ROOT — the Fortran module's constants (fortran/pcm.F90) against the C
header's (include/pcm.h, include/pcm_types.h): every numeric #define and enum value of the headers
must be in the module with the same value (unless listed in NOT_BOUND below), and every constant of
the module must be one of the headers'. Pure text: runs where no Fortran compiler is.
"""
import pathlib
import re
import sys

# Header constants the module leaves out on purpose (the calls that use them are not bound).
NOT_BOUND = set()


def c_constants(root: pathlib.Path) -> dict:
    found = {}
    for name in ("pcm_types.h", "pcm.h"):
        text = (root / "include" / name).read_text()
        for m in re.finditer(r"^#define\s+(PCM_\w+)\s+\(?\s*(-?(?:0x[0-9a-fA-F]+|\d+))\s*\)?",
                             text, re.M):
            found[m.group(1)] = int(m.group(2), 0)
        for m in re.finditer(r"^\s*(PCM_\w+)\s*=\s*(-?\d+)\s*,?", text, re.M):
            found[m.group(1)] = int(m.group(2))
    return found


def fortran_constants(root: pathlib.Path) -> dict:
    text = (root / "fortran" / "pcm.F90").read_text()
    return {m.group(1): int(m.group(2)) for m in re.finditer(
        r"^\s*integer\(c_int\),\s*parameter,\s*public\s*::\s*(PCM_\w+)\s*=\s*(-?\d+)", text,
        re.M | re.I)}


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    c, f = c_constants(root), fortran_constants(root)
    bad = []
    for name, value in sorted(c.items()):
        if name in NOT_BOUND:
            continue
        if name not in f:
            bad.append(f"{name} = {value} (pcm.h) is missing from fortran/pcm.F90")
        elif f[name] != value:
            bad.append(f"{name}: pcm.h {value}, fortran/pcm.F90 {f[name]}")
    bad += [f"{n} (fortran/pcm.F90) is not in pcm.h" for n in sorted(set(f) - set(c))]
    for line in bad:
        print("check_fortran_constants:", line)
    if bad or len(f) < 30:
        print(f"check_fortran_constants: FAIL ({len(f)} Fortran constants, {len(c)} in C)")
        return 1
    print(f"check_fortran_constants: ok: {len(f)} constants equal to pcm.h's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
