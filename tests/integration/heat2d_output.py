#!/usr/bin/env python3
"""heat2d_output.py BUILD dump|trace — run under with_pcmd.sh: heat2d's --dump and --trace.

dump:  heat2d_plain on 2 processes and heat2d_pcm on 2 (cyclic layout, rank 0 migrated mid-run)
       write byte-identical dumps of nx*ny doubles: row-major with the hot top row (all 100.0)
       first, fixed cold edges, and the same bytes that the printed checksum hashes (FNV-1a of the
       column-major grid). A dump that cannot be written fails the run.
trace: heat2d_plain (1 process) then heat2d_pcm (1 process, split into 2 mid-run) append to one
       trace: one header; every row parses, with epoch times that increase; intervals every 100
       iterations (--report 0) whose ms/iteration agree with the times and the throttle; the
       start rows, the split's event row (with the reason sent by pcmctl --why), and the process
       count 1 before it and 2 after.
"""
import csv
import os
import re
import struct
import subprocess
import sys
import time

build, mode = sys.argv[1], sys.argv[2]
MPIEXEC = os.environ.get("MPIEXEC", "mpiexec")
tmp = os.environ["PCM_TEST_DIR"]
pcmctl = os.path.join(build, "pcmctl")
plain_bin = os.path.join(build, "examples/heat2d/heat2d_plain")
pcm_bin = os.path.join(build, "examples/heat2d/heat2d_pcm")
NX, NY = 96, 64


def fail(msg, out=None):
    print(f"heat2d_output: FAIL: {msg}", file=sys.stderr)
    if out:
        sys.stderr.write("".join(f"  | {line}\n" for line in out.splitlines()))
    sys.exit(1)


def run_plain(np, args):
    p = subprocess.run([MPIEXEC, "-n", str(np), plain_bin] + args, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=300)
    if p.returncode != 0:
        fail(f"heat2d_plain {args} exited with {p.returncode}", p.stdout)
    return p.stdout


def run_pcm(np, args, job, commands):
    """Starts heat2d_pcm as job; for each (iteration, command) waits for the iteration, sends the
    command and waits for it to complete. Returns the output once the job has ended."""
    out_path = os.path.join(tmp, f"{job}.out")
    with open(out_path, "w") as out:
        p = subprocess.Popen([MPIEXEC, "-n", str(np), pcm_bin] + args, stdout=out,
                             stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             env=dict(os.environ, PCM_JOB=job))
    try:
        for n, (iteration, command) in enumerate(commands, 1):
            for step in (["wait", job, "--iteration", str(iteration), "--timeout", "120"],
                         command.split(),
                         ["wait", job, "--reconfigurations", str(n), "--timeout", "120"]):
                if subprocess.run([pcmctl] + step).returncode != 0:
                    fail(f"pcmctl {' '.join(step)} failed", open(out_path).read())
        rc = p.wait(timeout=300)
    finally:
        if p.poll() is None:
            p.kill()
    text = open(out_path).read()
    if rc != 0:
        fail(f"heat2d_pcm exited with {rc}", text)
    if f"reconfigurations {len(commands)}" not in text:
        fail(f"heat2d_pcm did not report {len(commands)} reconfigurations", text)
    return text


def checksum(text):
    m = re.search(r"^checksum ([0-9a-f]{16})$", text, re.M)
    if not m:
        fail("no checksum line", text)
    return m.group(1)


def fnv1a(data, h=14695981039346656037):
    for b in data:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def check_dump():
    base = ["--nx", str(NX), "--ny", str(NY), "--iters", "2000", "--throttle-us", "1000"]
    plain_path, pcm_path = os.path.join(tmp, "plain.bin"), os.path.join(tmp, "pcm.bin")
    plain = run_plain(2, base + ["--dump", plain_path])
    job = f"heat2d-dump-{os.getpid()}"
    pcm = run_pcm(2, base + ["--layout", "cyclic", "--dump", pcm_path], job,
                  [(100, f"migrate {job} 0")])
    if checksum(pcm) != checksum(plain):
        fail(f"checksums differ: PCM {checksum(pcm)}, plain {checksum(plain)}")
    a, b = open(plain_path, "rb").read(), open(pcm_path, "rb").read()
    for name, data in (("plain", a), ("PCM", b)):
        if len(data) != NX * NY * 8:
            fail(f"the {name} dump has {len(data)} bytes, expected {NX} * {NY} * 8")
    if a != b:
        fail("the dumps differ")
    v = struct.unpack(f"={NX * NY}d", a)
    rows = [v[i * NX:(i + 1) * NX] for i in range(NY)]
    if any(x != 100.0 for x in rows[0]):
        fail(f"the first row is not the hot boundary: {rows[0][:4]} ...")
    if any(x != 0.0 for x in rows[-1]) or any(r[0] != 0.0 or r[-1] != 0.0 for r in rows[1:]):
        fail("the cold edges (bottom row, first and last columns) are not 0")
    if not all(0.0 < x < 100.0 for x in rows[1][1:-1]) or not rows[1][NX // 2] > rows[2][NX // 2]:
        fail(f"the interior below the hot row is not warm and cooling downwards: {rows[1][:4]}")
    # The printed checksum hashes the column-major grid: transposing the dump must give it.
    col_major = b"".join(struct.pack("=d", rows[i][u]) for u in range(NX) for i in range(NY))
    if f"{fnv1a(col_major):016x}" != checksum(plain):
        fail("the dump transposed does not hash to the printed checksum")
    # A dump that cannot be written: reported, and the run fails.
    bad = subprocess.run([MPIEXEC, "-n", "2", plain_bin, "--nx", "16", "--ny", "16", "--iters", "5",
                          "--dump", os.path.join(tmp, "missing", "x.bin")],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    if bad.returncode == 0 or "--dump" not in bad.stdout:
        fail(f"an unwritable dump did not fail the run (exit {bad.returncode})", bad.stdout)
    print(f"heat2d_output: dump ok: {len(a)} bytes, identical, checksum {checksum(plain)}")


def check_trace():
    trace = os.path.join(tmp, "trace.csv")
    t_begin = time.time()
    run_plain(1, ["--nx", str(NX), "--ny", str(NY), "--iters", "300", "--throttle-us", "1000",
                  "--trace", trace])
    n_plain = sum(1 for _ in open(trace)) - 1
    job = f"heat2d-trace-{os.getpid()}"
    iters = 1500
    pcm = run_pcm(1, ["--nx", str(NX), "--ny", str(NY), "--iters", str(iters), "--throttle-us",
                      "1000", "--trace", trace], job, [(300, f"split {job} 0 --into 2 --why test:more,cores")])
    t_end = time.time()
    lines = open(trace).read().splitlines()
    if lines[0] != "time_s,iteration,procs,ms_per_iter,event":
        fail(f"header {lines[0]!r}")
    if lines.count(lines[0]) != 1:
        fail("the header is written more than once")
    rows = []
    for line in lines[1:]:
        f = next(csv.reader([line]))
        if len(f) != 5:
            fail(f"row {line!r} has {len(f)} fields")
        try:
            row = (float(f[0]), int(f[1]), int(f[2]), float(f[3]) if f[3] else None, f[4])
        except ValueError:
            fail(f"row {line!r} does not parse")
        if (row[3] is None) == (row[4] == ""):
            fail(f"row {line!r}: an event row has no ms_per_iter, an interval row no event")
        rows.append(row)
    times = [r[0] for r in rows]
    if any(b <= a for a, b in zip(times, times[1:])):
        fail("times do not increase")
    if not (t_begin - 1 <= times[0] and times[-1] <= t_end + 1):
        fail(f"times {times[0]}..{times[-1]} are not wall-clock times of this run")
    plain, pcm_rows = rows[:n_plain], rows[n_plain:]
    expect = [(0, 1, "start"), (100, 1, ""), (200, 1, ""), (300, 1, "")]
    if [(r[1], r[2], r[4]) for r in plain] != expect:
        fail(f"plain's rows {[(r[1], r[2], r[4]) for r in plain]}, expected {expect}")
    m = re.search(r"^heat2d: split 1 at iter (\d+) ", pcm, re.M)
    if not m:
        fail("no split line", pcm)
    at = int(m.group(1))
    events = [r for r in pcm_rows if r[4]]
    if [r[4].split()[0] for r in events] != ["start", "split"] or events[0][1:3] != (0, 1):
        fail(f"PCM's events {[(r[1], r[2], r[4]) for r in events]}")
    split = events[1]
    # The reason pcmctl sent (--why) follows, its comma made a space (CSV).
    if not re.fullmatch(r"split 1->2 \d+\.\d{3}s; test:more cores", split[4]) or \
            split[1:3] != (at, 2):
        fail(f"the split's row {split} (the split was at iteration {at})")
    k = pcm_rows.index(split)
    before, after = pcm_rows[1:k], pcm_rows[k + 1:]
    if any(r[2] != 1 for r in before) or any(r[2] != 2 for r in after):
        fail("the process count is not 1 before the split and 2 after it")
    want_before = list(range(100, at + 1, 100)) + ([at] if at % 100 else [])
    want_after = list(range((at // 100 + 1) * 100, iters + 1, 100))
    if [r[1] for r in before] != want_before or [r[1] for r in after] != want_after:
        fail(f"interval iterations {[r[1] for r in before]} | {[r[1] for r in after]}, expected "
             f"{want_before} | {want_after}")
    prev = pcm_rows[0]
    for r in pcm_rows[1:]:
        if r[3] is not None:
            # --throttle-us 1000 sleeps at least 1 ms per iteration; the interval's length in
            # iterations times its ms/iteration is the time since the previous row.
            span, computed = r[0] - prev[0], (r[1] - prev[1]) * r[3] / 1000
            if not 1.0 <= r[3] < 1000 or abs(span - computed) > 0.05 + 0.1 * span:
                fail(f"row {r}: {r[3]} ms/iteration over {r[1] - prev[1]} iterations, "
                     f"{span:.3f} s after the previous row")
        prev = r
    print(f"heat2d_output: trace ok: {len(rows)} rows, split 1->2 at iteration {at}")


check_dump() if mode == "dump" else check_trace()
