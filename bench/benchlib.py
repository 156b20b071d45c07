#!/usr/bin/env python3
"""benchlib.py — what the benchmark drivers share for their figures: medians, ratios, CSV rows
and the gnuplot calls that draw bench/plots/*.gp (the table each driver prints is in
bench/tables.py, which imports this). The Python drivers import it (bench/ is their own directory);
the shell drivers call it through bench/lib.sh's wrappers, as subcommands:

  benchlib.py median [--digits N] VALUE...      the median, N (4) digits after the point
  benchlib.py ratio [--digits N] A B            A / B
  benchlib.py diff [--digits N] A B             A - B
  benchlib.py rate [--digits N] CELLS MS        CELLS / (MS * 1000): Mcell-updates/s
  benchlib.py json-field FIELD...               a field of the JSON on stdin (keys, or list
                                                indices: jobs 0 iteration)
  benchlib.py plot NAME PNG ARG...              gnuplot -c bench/plots/NAME.gp ARG... (the
                                                script's own arguments, PNG among them where it
                                                takes one), then prints "plot: PNG"
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PLOTS = os.path.join(HERE, "plots")


def median(values):
    """The median of any iterable of numbers (generators too)."""
    return statistics.median(list(values))


def fmt(value, digits=4):
    return f"{value:.{digits}f}"


def spread(values, digits=3):
    """'(min-max)' of values, as the tables print a range."""
    values = list(values)
    return f"({min(values):.{digits}f}-{max(values):.{digits}f})"


def read_rows(path):
    """A CSV file with a header line, as a list of dicts."""
    with open(path) as f:
        return list(csv.DictReader(f))


def write_rows(path, header, rows):
    """Writes a CSV file: the header, then each row (a sequence of values)."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def plot(name, *args, png=None, check=True, **run_kw):
    """Runs gnuplot -c bench/plots/NAME.gp ARGS (strings; run_kw to subprocess.run); prints
    "plot: PNG" when png is given. Returns the CompletedProcess."""
    r = subprocess.run(["gnuplot", "-c", os.path.join(PLOTS, f"{name}.gp"), *map(str, args)],
                       check=check, **run_kw)
    if png:
        print(f"plot: {png}", flush=True)
    return r


def _json_field(fields):
    value = json.load(sys.stdin)
    for f in fields:
        value = value[int(f)] if isinstance(value, list) else value[f]
    return value


def main(argv):
    p = argparse.ArgumentParser(prog="benchlib.py", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    for name, nargs in (("median", "+"), ("ratio", 2), ("diff", 2), ("rate", 2)):
        s = sub.add_parser(name)
        s.add_argument("--digits", type=int, default=4 if name != "rate" else 2)
        s.add_argument("values", nargs=nargs, type=float)
    sub.add_parser("json-field").add_argument("fields", nargs="+")
    g = sub.add_parser("plot")
    g.add_argument("name")
    g.add_argument("png")
    g.add_argument("args", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)
    if a.cmd == "median":
        print(fmt(median(a.values), a.digits))
    elif a.cmd == "ratio":
        print(fmt(a.values[0] / a.values[1], a.digits))
    elif a.cmd == "diff":
        print(fmt(a.values[0] - a.values[1], a.digits))
    elif a.cmd == "rate":
        print(fmt(a.values[0] / (a.values[1] * 1e3), a.digits))
    elif a.cmd == "json-field":
        print(_json_field(a.fields))
    elif a.cmd == "plot":
        plot(a.name, *a.args, png=a.png)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
