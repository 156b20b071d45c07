#!/usr/bin/env python3
"""check_malleability.py SCRIPT — runs bench/malleability.sh (its quick variant: the
caller sets BENCH_SIZES and BENCH_REPS) with BENCH_CSV and BENCH_PNG in a scratch directory, and
checks what it made: it exits 0 having verified every move, its CSV passes check_bench's checks
and holds, for every size, every method (METHODS) in both directions (1->2, 2->1) with
BENCH_REPS positive times each, and its plot is a real PNG (check_bench.check_png)."""
import csv
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_bench import check_csv, check_png, run_main, run_script  # noqa: E402

COLUMNS = ["size_mib", "direction", "method", "rep", "seconds"]
METHODS = ("live", "live_bg", "adapt", "adapt_bg", "ckpt", "raw")


def main():
    script = sys.argv[1]
    sizes = {int(s) for s in os.environ.get("BENCH_SIZES", "16 64 256 1024").split()}
    reps = int(os.environ.get("BENCH_REPS", "3"))
    with tempfile.TemporaryDirectory() as d:
        csv_path, png_path = os.path.join(d, "out.csv"), os.path.join(d, "out.png")
        out = run_script(script, BENCH_CSV=csv_path, BENCH_PNG=png_path)
        assert "every move checked every element: all correct" in out, "no verification line"
        check_csv(csv_path, COLUMNS)
        rows = list(csv.DictReader(open(csv_path)))
        for size in sizes:
            for method in METHODS:
                for direction in ("1->2", "2->1"):
                    times = [float(r["seconds"]) for r in rows if int(r["size_mib"]) == size
                             and r["method"] == method and r["direction"] == direction]
                    assert len(times) == reps and all(t > 0 for t in times), \
                        f"{size} MiB {method} {direction}: times {times}, expected {reps} positive"
        expected = len(sizes) * len(METHODS) * 2 * reps
        assert len(rows) == expected, f"{len(rows)} rows, expected {expected}"
        w, h = check_png(png_path)
        print(f"check_malleability: CSV ok ({len(rows)} rows), PNG ok ({w}x{h})")


if __name__ == "__main__":
    run_main("check_malleability", main)
