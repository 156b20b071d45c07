#!/usr/bin/env python3
"""check_timeline.py SCRIPT — runs bench/timeline.sh's quick variant (BENCH_QUICK=1) with
BENCH_OUT in a scratch directory and checks what it made: it exits 0 and its checksum check
passed; trace.csv is heat2d's trace (numbers, increasing times) whose reconfigurations are
split 1->2, merge 2->1, split 1->2 with the process count following them; events.csv holds the
competing load's starts and ends, alternating, inside the run; the summary table has the phases
(1 process with the load, 2 without, 2 with) with positive throughputs; timeline.png is a real
plot. Uses check_bench.py's CSV and PNG checks."""
import csv
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_bench import check_csv, check_png, run_main, run_script  # noqa: E402


def main():
    script = sys.argv[1]
    with tempfile.TemporaryDirectory() as d:
        out = run_script(script, BENCH_QUICK="1", BENCH_OUT=d)
        assert re.search(r"^checksum: PCM run [0-9a-f]{16} = plain run on 2 processes: match "
                         r"\(3 reconfigurations\)$", out, re.M), "no checksum match line"

        trace, events = os.path.join(d, "trace.csv"), os.path.join(d, "events.csv")
        check_csv(trace, ["time_s", "iteration", "procs", "ms_per_iter", "event"])
        rows = list(csv.DictReader(open(trace)))
        times = [float(r["time_s"]) for r in rows]
        assert all(b > a for a, b in zip(times, times[1:])), "trace times do not increase"
        reconf = [r for r in rows if r["event"] and r["event"] != "start"]
        kinds = [r["event"].split()[:2] for r in reconf]
        assert kinds == [["split", "1->2"], ["merge", "2->1"], ["split", "1->2"]], kinds
        # The process count changes exactly at the reconfigurations' rows.
        procs, k = 1, 0
        for r in rows:
            if k < len(reconf) and r is reconf[k]:
                procs = int(r["event"].split()[1].split("->")[1])
                k += 1
            assert int(r["procs"]) == procs, f"row {r} during a phase on {procs} processes"

        check_csv(events, ["time_s", "label"])
        ev = list(csv.DictReader(open(events)))
        labels = [e["label"] for e in ev]
        assert labels == ["competing load starts", "competing load ends"] * 2, labels
        et = [float(e["time_s"]) for e in ev]
        assert all(b > a for a, b in zip(et, et[1:])), "event times do not increase"
        assert et[0] <= times[0] and times[0] < et[1] and et[-1] < times[-1], \
            "the load does not start before the run and change during it"

        phases = re.findall(r"^\s+\d+\s+[\d.]+\s+[\d.]+\s+(\d)\s+(yes|no)\s+(\d+)\s+([\d.]+)\s",
                            out, re.M)
        seen = {(int(pr), load) for pr, load, n, med in phases if int(n) > 0 and float(med) > 0}
        assert {(1, "yes"), (2, "no"), (2, "yes")} <= seen, f"phases in the table: {phases}"
        w, h = check_png(os.path.join(d, "timeline.png"))
        print(f"check_timeline: {len(rows)} trace rows, {len(phases)} phases, PNG {w}x{h}")


if __name__ == "__main__":
    run_main("check_timeline", main)
