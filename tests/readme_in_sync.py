#!/usr/bin/env python3
"""readme_in_sync.py README EXAMPLE — fails unless README.md contains EXAMPLE verbatim in a ```c block."""
import re
import sys

readme, example = (open(p, encoding="utf-8").read() for p in sys.argv[1:3])
blocks = re.findall(r"```c\n(.*?)```", readme, re.S)
if example not in blocks:
    print(f"{sys.argv[1]} has no ```c block equal to {sys.argv[2]}; copy the file into the README")
    sys.exit(1)
print("README example is in sync")
