#!/usr/bin/env python3
"""site_move.py BUILD — a whole job moved between sites (issue 26, item 4).

Two sites of three namespace hosts (testbed/sites.sh, a prefix of this test's own), pcmd on a1
and the front-ends' relays as in sites.py. heat2d_pcm runs under `pcmctl run --on-inventory
--site a` (pcmctl run on a1) on a1 and a2; `pcmctl move JOB --site b` has pcmctl run stop it
through PCM (a last version, the processes' own end) and relaunch it from that version on site b's three hosts (mpiexec inside b1 through
--site-launcher, the ranks reaching pcmd through b's relay with --site-config). Asserts:

  - a move asked before the job's first run registered waits for it (issue 38 item 8);
  - a move to a site pcmd does not know is refused with the reason;
  - the move is done: the job runs on b1, b2, b3 and restarted there from the move's version
    (2 processes then, 3 now);
  - the policy: b1 drained while site b's hosts are full (and closed to site a), pcmd asks a move
    to site a, which pcmctl run carries out (3 processes then, 2 now);
  - the job finishes with the plain run's checksum, bit for bit;
  - the events hold the move, asked and done, with its timings (last version and stop, the
    processes' end, relaunch); each run stopped through PCM (its processes ended by themselves,
    none lost, no TERM from pcmctl run).

Exits 77 (ctest SKIPPED) with the reason where namespaces cannot be made (no root).
"""
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testbed"))
import cluster  # noqa: E402
import site_cluster  # noqa: E402  (Sites, start_relayed, relay_site_b, main_with)
from cluster import Failure, log  # noqa: E402
from site_cluster import supervised, wait_supervised  # noqa: E402

ARGS = ["--nx", "61", "--ny", "40", "--iters", "2000"]


def back_by_drain(c, job, host, want):
    """The policy: host drained while site b's hosts are full and closed to site a: pcmd asks
    pcmctl run to move the job whole to the site with room (a), which it does."""
    wait_supervised(c, job)
    t0 = time.monotonic()
    c.pcmctl("host", "drain", host)
    while True:
        mv = c.status(job).get("move") or {}
        if mv.get("site") == "a" and mv.get("state") in ("done", "failed"):
            break
        if time.monotonic() - t0 > 120:
            raise Failure(f"no move to site a within 120 s of the drain of {host}: {mv}")
        time.sleep(0.1)
    st = c.status(job)
    if mv["state"] != "done" or st["hosts"] != want:
        raise Failure(f"after the drain of {host}: move {mv}, hosts {st['hosts']}, wanted {want}")
    log(f"drain of {host}: moved back to site a by the policy after "
        f"{time.monotonic() - t0:.1f} s: {mv['text']}")


def scenario(c):
    a1, a2, _ = c.a
    b1, b2, b3 = c.names
    site_cluster.start_relayed(c, "--hosts", f"{a1}:1@a,{a2}:1@a,{b1}:1@b,{b2}:1@b,{b3}:1@b")
    plain = cluster.heat2d_plain(c.build, ARGS)
    job = "move-heat"
    out = os.path.join(c.tmp, "job.out")
    throttle, unthrottle = cluster.stretched(c)
    run = supervised(c, job, out, [*ARGS, *throttle])
    # Asked before pcmctl run's first run has registered: pcmctl move waits for it (--start-wait).
    t0 = time.monotonic()
    r = c.pcmctl("move", job, "--site", "b", "--wait", "120", check=False)
    took = time.monotonic() - t0
    if r.returncode != 0:
        raise Failure(f"pcmctl move exited {r.returncode}: {r.stdout} {r.stderr}\n"
                      f"{c.pcmctl('host', 'list').stdout}")
    if f"job '{job}' is not known to pcmd yet: waiting for its run to register" not in r.stderr:
        raise Failure(f"pcmctl move, asked before the job registered, did not wait for it: "
                      f"{r.stderr}")
    log(f"pcmctl move {job} --site b, asked before the job registered ({took:.1f} s): "
        f"{r.stdout.strip()}")
    r = c.pcmctl("move", job, "--site", "c", check=False)
    if r.returncode == 0 or "no host of site 'c'" not in r.stderr:
        raise Failure(f"a move to an unknown site was not refused with the reason: {r.stderr}")
    log(f"refused: {r.stderr.strip()}")
    c.pcmctl("wait", job, "--iteration", "20", "--timeout", "120")
    st = c.status(job)
    if st["state"] != "running" or st["hosts"] != [b1, b2, b3]:
        raise Failure(f"after the move pcmd shows {st['state']} on {st['hosts']}, expected "
                      f"running on {[b1, b2, b3]}")
    if (st.get("move") or {}).get("state") != "done":
        raise Failure(f"the move is not recorded done: {st.get('move')}")
    back_by_drain(c, job, b1, [a1, a2])
    unthrottle()
    try:
        rc = run.wait(timeout=120)
    except subprocess.TimeoutExpired:
        raise Failure("pcmctl run did not end within 120 s of the move")
    text = open(out).read()
    if rc != 0:
        raise Failure(f"pcmctl run exited {rc}:\n{text[-3000:]}")
    m = re.search(r"^checksum (\w+)", text, re.M)
    if not m or m.group(1) != plain:
        raise Failure(f"checksum {m.group(1) if m else None} differs from the plain run's {plain}")
    restarts = re.findall(r"^heat2d: restarted from iteration (\d+) \((\d+) -> (\d+) processes\)",
                          text, re.M)
    if [(x[1], x[2]) for x in restarts] != [("2", "3"), ("3", "2")]:
        raise Failure(f"not one restart from 2 to 3 processes, then from 3 to 2:\n{text[-3000:]}")
    events = c.pcmctl("events", job).stdout
    # Each move stops its run through PCM: a last version, the processes' own end (exit 75, or
    # hydra's 0), never TERM from pcmctl run; no process is lost.
    launcher = r"its launcher exited with (0|75) [\d.]+ s later"
    wanted = [r"move to site b asked", r"stop \d+ asked: move to site b",
              r"stopped at iteration \d+ \(asked to stop by pcmd: move to site b\): the last version "
              r"is of iteration",
              rf"move to site b: the run on {a1}:1,{a2}:1 stopped after its last version [\d.]+ s "
              rf"after the move was asked; {launcher}; relaunching on 3 processes",
              rf"restarted from iteration {restarts[0][0]} \(2 processes then, 3 now\)",
              r"move to site b done: iterating again [\d.]+ s after it was asked \(last version "
              r"and stop [\d.]+ s, processes' end [\d.]+ s, relaunch until iterating [\d.]+ s",
              rf"move to site a asked by the drain of {b1} \(",
              rf"move to site a: the run on {b1}:1,{b2}:1,{b3}:1 stopped after its last version "
              rf"[\d.]+ s after the move was asked; {launcher}", r"move to site a done: "]
    for w in wanted:
        if not re.search(w, events):
            raise Failure(f"the events lack /{w}/:\n{events}")
    for unwanted in [r"was lost", r"launcher was still there", r"withdrawn"]:
        if re.search(unwanted, events):
            raise Failure(f"the events hold /{unwanted}/:\n{events}")
    log(f"the events:\n{events}")
    log(f"ok: site_move: moved from site a (2 processes) to site b (3) under pcmctl run, and back "
        f"by a drain; checksum {plain} as plain")


if __name__ == "__main__":
    sys.exit(site_cluster.main_with(scenario, "site_move"))
