#!/usr/bin/env python3
"""readme_in_sync.py SOURCE_DIR [DOC.md=EXAMPLE ...] — the README and docs/ against the sources.

Fails unless
- each DOC.md (a path under SOURCE_DIR) holds the file EXAMPLE verbatim in a fenced block of its
  language: ```c for EXAMPLE.c, ```fortran for .f90, ```python for .py;
- every relative link and image in README.md and docs/**/*.md names a file or directory that
  exists (http(s) and mailto links are not followed), and its #anchor, if any, names a heading
  of the markdown file it points to;
- no two headings of one markdown file have the same GitHub anchor.
"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1])
errors = []


def prose(text):
    """The lines outside fenced code blocks."""
    fenced = False
    for line in text.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            yield line


def anchor(heading):
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link counts as its text
    return re.sub(r"[^\w\- ]", "", text.replace("`", "").strip().lower()).replace(" ", "-")


def anchors(path):
    found = []
    for line in prose(path.read_text(encoding="utf-8")):
        m = re.match(r"#{1,6} (.*)", line)
        if m:
            found.append(anchor(m.group(1)))
    return found


LANGUAGES = {".c": "c", ".f90": "fortran", ".py": "python"}
for pair in sys.argv[2:]:
    doc, _, example = pair.partition("=")
    lang = LANGUAGES.get(pathlib.PurePath(example).suffix)
    if lang is None:
        errors.append(f"{pair}: {example} is none of {', '.join(LANGUAGES)}")
        continue
    text = (root / doc).read_text(encoding="utf-8")
    blocks = re.findall(rf"```{lang}\n(.*?)```", text, re.S)
    if (root / example).read_text(encoding="utf-8") not in blocks:
        errors.append(f"{doc} has no ```{lang} block equal to {example}; copy the file into it")

pages = [root / "README.md"] + sorted((root / "docs").rglob("*.md"))
links = 0
for page in pages:
    name = page.relative_to(root)
    seen = anchors(page)
    for a in sorted({a for a in seen if seen.count(a) > 1}):
        errors.append(f"{name}: two headings have the anchor #{a}")
    for line in prose(page.read_text(encoding="utf-8")):
        line = re.sub(r"`[^`]*`", "", line)  # links are not looked for in inline code
        for target in re.findall(r"\]\(([^)\s]+)\)", line):
            if re.match(r"(https?|mailto):", target) or target.startswith("#"):
                continue
            links += 1
            file, _, fragment = target.partition("#")
            dest = (page.parent / file).resolve()
            if not dest.exists():
                errors.append(f"{name}: link to {target}: no such file")
            elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
                errors.append(f"{name}: link to {target}: {file} has no heading #{fragment}")
    for fragment in re.findall(r"\]\(#([^)\s]+)\)", "\n".join(prose(page.read_text(encoding="utf-8")))):
        if fragment not in seen:
            errors.append(f"{name}: link to #{fragment}: no such heading here")

for e in errors:
    print(e)
if errors:
    sys.exit(1)
print(f"README and docs in sync: {len(sys.argv) - 2} examples, {len(pages)} pages, {links} links")
