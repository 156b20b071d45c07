#!/usr/bin/env python3
"""readme_in_sync.py README EXAMPLE... — fails unless README.md contains each EXAMPLE verbatim in a ```c block."""
import re
import sys

readme = open(sys.argv[1], encoding="utf-8").read()
blocks = re.findall(r"```c\n(.*?)```", readme, re.S)
for path in sys.argv[2:]:
    if open(path, encoding="utf-8").read() not in blocks:
        print(f"{sys.argv[1]} has no ```c block equal to {path}; copy the file into the README")
        sys.exit(1)
print(f"README examples are in sync: {len(sys.argv) - 2}")
