#!/usr/bin/env python3
"""check_bench.py SCRIPT [--csv-columns A,B,...] [--expect TEXT]... — runs a benchmark script's
quick variant with BENCH_CSV and BENCH_PNG pointing into a scratch directory, and checks what it
made: it exits 0, prints every expected text, writes a CSV with exactly those columns and at
least one row, in which every value is a number and every time or rate is positive, and writes
a real PNG (signature, IHDR, a plot-sized image, more than a few KB, not one flat colour)."""
import argparse
import csv
import math
import os
import struct
import subprocess
import sys
import tempfile
import zlib


def check_png(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path}: not a PNG"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13, f"{path}: no IHDR"
    width, height = struct.unpack(">II", data[16:24])
    assert width >= 400 and height >= 300, f"{path}: {width}x{height} is too small for a plot"
    assert len(data) > 8000, f"{path}: {len(data)} bytes is too little for a plot"
    # The image data must vary: inflate the IDAT chunks and count distinct byte values.
    pos, idat = 8, b""
    while pos < len(data):
        n, t = struct.unpack(">I4s", data[pos:pos + 8])
        if t == b"IDAT":
            idat += data[pos + 8:pos + 8 + n]
        pos += 12 + n
    pixels = zlib.decompress(idat)
    assert len(set(pixels)) > 8, f"{path}: the image is (nearly) one colour"
    return width, height


def positive_column(name):
    return any(k in name for k in ("ms", "seconds", "mcells", "_s", "rate"))


def check_csv(path, columns):
    rows = list(csv.reader(open(path)))
    assert rows, f"{path}: empty"
    assert rows[0] == columns, f"{path}: columns {rows[0]}, expected {columns}"
    assert len(rows) > 1, f"{path}: no data rows"
    for row in rows[1:]:
        assert len(row) == len(columns), f"{path}: row {row} has {len(row)} fields"
        for name, value in zip(columns, row):
            try:
                v = float(value)
            except ValueError:
                continue  # a label column (method, direction, event)
            assert math.isfinite(v), f"{path}: {name} = {value}"
            if positive_column(name):
                assert v > 0, f"{path}: {name} = {value} is not positive"
    return len(rows) - 1


def run_script(script, **env_extra):
    """Runs a benchmark script with no standard input and the given environment on top of ours,
    prints what it printed, checks that it exited 0 and returns its output."""
    env = dict(os.environ, **env_extra)
    p = subprocess.run(["bash", script], env=env, stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=280)
    print(p.stdout)
    assert p.returncode == 0, f"{script} exited with {p.returncode}"
    return p.stdout


def run_main(name, main):
    """Runs a checker's main; a failed assertion prints 'NAME: FAIL: why' and exits 1."""
    try:
        main()
    except AssertionError as e:
        print(f"{name}: FAIL: {e}", file=sys.stderr)
        sys.exit(1)
    print(f"{name}: ok")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("script")
    ap.add_argument("--csv-columns")
    ap.add_argument("--expect", action="append", default=[])
    ap.add_argument("--no-png", action="store_true")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        csv_path, png_path = os.path.join(d, "out.csv"), os.path.join(d, "out.png")
        out = run_script(a.script, BENCH_CSV=csv_path, BENCH_PNG=png_path)
        for text in a.expect:
            assert text in out, f"{a.script} did not print {text!r}"
        if a.csv_columns:
            n = check_csv(csv_path, a.csv_columns.split(","))
            print(f"check_bench: CSV ok, {n} rows")
        if not a.no_png:
            w, h = check_png(png_path)
            print(f"check_bench: PNG ok, {w}x{h}")


if __name__ == "__main__":
    run_main("check_bench", main)
