#!/usr/bin/env python3
"""hosts.py BUILD — reconfigurations across hosts against the same on one host, side by side.

Runs on a cluster of two network-namespace hosts (testbed/cluster.py's Cluster: testbed/hosts.sh,
pcmd inside host 1, heat2d started there through testbed/launcher_hosts.sh; each host pinned to a
CPU of its own where the machine has two). One heat2d_pcm job (BENCH_NX x BENCH_NY, 2 processes on
host 1) is driven through pcmctl, alternating the two cases of each pair so that drift in the
machine's speed touches both alike:
  1. migration of rank 1 within its host against migration to the other host (BENCH_REPS pairs);
  2. growth 2 -> 4 with the new processes on host 1 against on host 2, then back to 2
     (BENCH_REPS pairs);
  3. heat2d ms/iteration on 2 processes placed by spread (one per host) against by concentrate
     (both on host 1), each host given 2 slots (`pcmctl host add`, `pcmctl resize --placement`),
     over BENCH_ITERS iterations each (BENCH_REPS pairs).
Prints each pair and the median ratio (other host / same host; spread / concentrate). The final
checksum must equal plain heat2d's. Exits 77 (SKIPPED) where namespaces cannot be made.
"""
import csv
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testbed"))
import benchlib  # noqa: E402  (bench/, this file's directory)
import cluster  # noqa: E402

REPS = int(os.environ.get("BENCH_REPS", "3"))
NX = os.environ.get("BENCH_NX", "512")
NY = os.environ.get("BENCH_NY", "512")
ITERS = int(os.environ.get("BENCH_ITERS", "400"))


def run(c):
    h1, h2 = c.names
    c.start_pcmd("--hosts", f"{h1}:4", f"{h2}:4")
    job = "bench-hosts"
    trace = os.path.join(c.tmp, "trace.csv")
    out = os.path.join(c.tmp, "job.out")
    total = 10_000_000  # ended by pcmctl: the job is stopped at the end (see below)
    p = c.mpiexec([f"{h1}:2"], 2, [os.path.join(c.build, "examples/heat2d/heat2d_pcm"), "--nx", NX,
                                   "--ny", NY, "--iters", str(total), "--trace", trace], out,
                  env={"PCM_JOB": job})
    done = 0

    def step(*cmd):
        nonlocal done
        c.pcmctl(*cmd)
        done += 1
        c.pcmctl("wait", job, "--reconfigurations", str(done), "--timeout", "300")
        # heat2d prints "heat2d: KIND N at iter I T s (procs A -> B)" for reconfiguration N.
        for _ in range(200):
            m = re.search(rf"^heat2d: \w+ {done} at iter \d+ ([\d.]+) s", open(out).read(), re.M)
            if m:
                return float(m.group(1))
            cluster.time.sleep(0.05)
        raise cluster.Failure(f"heat2d printed no line for reconfiguration {done}")

    def iteration():
        return int(c.status(job)["iteration"])

    c.pcmctl("wait", job, "--iteration", "50", "--timeout", "120")
    rows = {"migrate": [], "grow": [], "place": []}
    where = h1  # rank 1's host
    for _ in range(REPS):
        same = step("migrate", job, "1", "--host", where)
        where = h2 if where == h1 else h1
        other = step("migrate", job, "1", "--host", where)
        rows["migrate"].append((same, other))
    if where != h1:
        step("migrate", job, "1", "--host", h1)
    for _ in range(REPS):
        one = step("resize", job, "--to", "4", "--host", h1)
        step("resize", job, "--to", "2")
        two = step("resize", job, "--to", "4", "--host", h2)
        step("resize", job, "--to", "2")
        rows["grow"].append((one, two))
    # 3: two processes, each host with room for both: concentrate puts them on host 1, spread
    # one on each host (each host has a CPU of its own where the machine has two).
    c.pcmctl("host", "add", h1, "--slots", "2")
    c.pcmctl("host", "add", h2, "--slots", "2")
    marks = []
    for _ in range(REPS):
        pair = []
        for placement in ("spread", "concentrate"):
            step("resize", job, "--to", "1")
            step("resize", job, "--to", "2", "--placement", placement)
            hosts = c.status(job)["hosts"]
            start = iteration() + 20
            c.pcmctl("wait", job, "--iteration", str(start + ITERS), "--timeout", "600")
            pair.append((placement, hosts, start, start + ITERS))
        marks.append(pair)
    # End the job: it runs until killed (its iteration count is out of reach).
    c.stop_jobs()
    # ms/iteration of each measured window: the trace's progress rows inside it (4 processes).
    with open(trace) as f:
        prog = [(int(r["iteration"]), int(r["procs"]), float(r["ms_per_iter"]))
                for r in csv.DictReader(f) if r["ms_per_iter"]]

    def window_ms(a, b):
        ms = [m for it, n, m in prog if n == 2 and a < it <= b]
        if not ms:
            raise cluster.Failure(f"no trace rows for iterations {a}..{b}")
        return benchlib.median(ms)

    for pair in marks:
        (_, hs, a1, b1), (_, hc, a2, b2) = pair
        rows["place"].append((window_ms(a2, b2), window_ms(a1, b1), hs, hc))

    print(f"bench_hosts: heat2d {NX}x{NY}, 2 namespace hosts ({h1}, {h2}), {REPS} pairs each")
    print("1. migration of rank 1 (s): same host | other host | ratio")
    for same, other in rows["migrate"]:
        print(f"   {same:.3f} | {other:.3f} | {other / same:.2f}")
    print(f"   median ratio other/same: "
          f"{benchlib.median(o / s for s, o in rows['migrate']):.2f}")
    print("2. growth 2 -> 4 (s): new processes on host 1 | on host 2 | ratio")
    for one, two in rows["grow"]:
        print(f"   {one:.3f} | {two:.3f} | {two / one:.2f}")
    print(f"   median ratio host2/host1: {benchlib.median(t / o for o, t in rows['grow']):.2f}")
    print("3. heat2d ms/iteration on 2 processes: concentrate | spread | ratio")
    for conc, spread, hs, hc in rows["place"]:
        print(f"   {conc:.3f} {hc} | {spread:.3f} {hs} | {spread / conc:.2f}")
    print(f"   median ratio spread/concentrate: "
          f"{benchlib.median(s / c_ for c_, s, _, _ in rows['place']):.2f}")


def main():
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} BUILD", file=sys.stderr)
        return 2
    return cluster.run_on_cluster(os.path.abspath(sys.argv[1]), 2, run, "bench_hosts")


if __name__ == "__main__":
    sys.exit(main())
