#!/usr/bin/env python3
"""multihost.py BUILD SCENARIO — PCM on a cluster of network-namespace hosts (testbed/cluster.py).

Each scenario makes its own hosts (a prefix of its own), runs pcmd inside host 1 bound to host 1's
address, starts the job with mpiexec inside host 1 through testbed/launcher_hosts.sh, drives it
with pcmctl, and removes everything it made at the end. Traffic goes only to these hosts.

  reconfig   heat2d on 2 hosts: migrate to a third host, split onto a host that just joined,
             merge off a host, grow and shrink across hosts; after each step the hosts pcmctl
             status reports must be the ones asked for; the final checksum equals the plain run's.

Exits 77 (ctest SKIPPED) with the reason where namespaces cannot be made (no root).
"""
import csv
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testbed"))
import cluster  # noqa: E402
from cluster import (LAUNCHER, Failure, expect_hosts, heat2d_plain, host_table,  # noqa: E402
                     kill_host, log, mpi_family, run_on_cluster, start_host_agent, stretched,
                     wait_job)


def scenario_reconfig(c):
    h1, h2, h3 = c.names
    c.start_pcmd("--hosts", f"{h1}:2", f"{h2}:2", f"{h3}:2")
    job = "mh-heat"
    args = ["--nx", "61", "--ny", "40"]
    # Long enough (stretched) to outlast every step under a loaded machine; once they are done,
    # the run goes on unthrottled.
    plain = heat2d_plain(c.build, [*args, "--iters", "2000"])
    out = os.path.join(c.tmp, "job.out")
    throttle, unthrottle = stretched(c)
    p = c.mpiexec([h1, h2], 2, [os.path.join(c.build, "examples/heat2d/heat2d_pcm"), *args,
                                "--iters", "2000", *throttle], out, env={"PCM_JOB": job})
    c.pcmctl("wait", job, "--iteration", "20", "--timeout", "120")
    st = c.status(job)
    if st["hosts"] != [h1, h2]:
        raise Failure(f"the job starts on {st['hosts']}, expected {[h1, h2]}")
    steps = [
        (["migrate", job, "1", "--host", h3], [h1, h3]),
        (["split", job, "0", "--into", "2", "--host", h2], [h2, h2, h3]),
        (["merge", job, "1", "2"], [h2, h2]),  # merges the process on h3 off that host
        (["resize", job, "--to", "4", "--host", h3], [h2, h2, h3, h3]),
        (["resize", job, "--to", "3"], [h2, h2, h3]),
        (["migrate", job, "0", "--host", h1], [h1, h2, h3]),
    ]
    for done, (cmd, want) in enumerate(steps, start=1):
        c.pcmctl(*cmd)
        c.pcmctl("wait", job, "--reconfigurations", str(done), "--timeout", "180")
        got = c.status(job)["hosts"]
        if got != want:
            raise Failure(f"after {' '.join(cmd)}: pcmctl status reports hosts {got}, expected {want}")
        log(f"{' '.join(cmd)}: hosts {got}")
    unthrottle()
    text = wait_job(c, job, p, out, len(steps))
    m = re.search(r"^checksum (\w+)", text, re.M)
    if not m or m.group(1) != plain:
        raise Failure(f"checksum {m.group(1) if m else None} differs from the plain run's {plain}")
    log(f"ok: reconfig: {len(steps)} reconfigurations over 3 hosts, checksum {plain} as plain")


def scenario_failure(c):
    h1, h2, h3 = c.names
    c.start_pcmd("--hosts", f"{h1}:2", f"{h2}:2", f"{h3}:2")
    heat = os.path.join(c.build, "examples/heat2d/heat2d_pcm")
    args = ["--nx", "97", "--ny", "64", "--iters", "1200", "--layout", "cyclic"]
    plain = heat2d_plain(c.build, args)
    out_a, out_b = os.path.join(c.tmp, "job.out"), os.path.join(c.tmp, "b.out")
    a = c.mpiexec([h1, h2, h3], 3, [heat, *args, "--commit-every", "100", "--throttle-us", "1500"],
                  out_a, env={"PCM_JOB": "mh-a"})
    b = c.mpiexec([h1, h2], 2, [heat, *args, "--throttle-us", "3000"], out_b,
                  env={"PCM_JOB": "mh-b"}, spawn_hosts=[])
    c.pcmctl("wait", "mh-a", "--iteration", "450", "--timeout", "120")
    c.pcmctl("wait", "mh-b", "--iteration", "20", "--timeout", "120")
    if c.status("mh-a")["hosts"] != [h1, h2, h3]:
        raise Failure(f"job a runs on {c.status('mh-a')['hosts']}, expected {[h1, h2, h3]}")
    # Host 3 vanishes: every process in its namespace is killed (by pid; kill_host).
    n = kill_host(h3)
    if not n:
        raise Failure(f"no processes run on {h3}")
    log(f"killed {n} processes on {h3}")
    c.pcmctl("wait", "mh-a", "--ended", "--timeout", "60", check=False)
    st = c.status("mh-a")
    if st["state"] != "failed":
        raise Failure(f"after {h3} vanished pcmd shows job a {st['state']}: {st['last_event']}")
    # pcmd names the first loss it saw; the losses that follow (MPI tearing the job down on the
    # hosts left) are listed after it. Host 3's must be among them, and come first on a quiet
    # machine.
    lost_hosts = [x.split(" on ")[-1] for x in st.get("lost", [])]
    if h3 not in lost_hosts:
        raise Failure(f"job a's lost processes do not name {h3}: {st.get('lost')} "
                      f"({st['last_event']})")
    if h3 not in st["last_event"]:
        log(f"note: the first loss pcmd saw was not on {h3} (a loaded machine): {st['lost']}")
    log(f"job a failed: {st['last_event']}; lost: {st['lost']}")
    try:
        a.wait(timeout=60)
    except subprocess.TimeoutExpired:
        raise Failure("job a's mpiexec did not end after its host vanished")
    # pcmd serves the other job to its end.
    text = wait_job(c, "mh-b", b, out_b, 0)
    m = re.search(r"^checksum (\w+)", text, re.M)
    if not m or m.group(1) != plain:
        raise Failure(f"job b: checksum {m.group(1) if m else None}, plain {plain}")
    # The newest checkpoint restarts job a on the two hosts left.
    out_r = os.path.join(c.tmp, "restart.out")
    r = c.mpiexec([h1, h2], 2, [heat, *args, "--throttle-us", "0"], out_r,
                  env={"PCM_JOB": "mh-a", "PCM_RESTART": "1"}, spawn_hosts=[])
    text = wait_job(c, "mh-a", r, out_r, 0)
    k = re.search(r"^heat2d: restarted from iteration (\d+) \(3 -> 2 processes\)", text, re.M)
    m = re.search(r"^checksum (\w+)", text, re.M)
    if not k or int(k.group(1)) < 400:
        raise Failure(f"the restart did not resume from a version >= 400: {text[-2000:]}")
    if not m or m.group(1) != plain:
        raise Failure(f"restart: checksum {m.group(1) if m else None}, plain {plain}")
    log(f"ok: failure: {h3} vanished, job a failed naming it, job b finished, job a restarted "
        f"on {h1},{h2} from iteration {k.group(1)}, checksum {plain} as plain")


def scenario_drain(c):
    h1, h2, h3 = c.names
    c.start_pcmd("--hosts", f"{h1}:2", f"{h2}:2")
    job = "mh-drain"
    args = ["--nx", "61", "--ny", "40", "--layout", "block-cyclic", "--block", "3"]
    plain = heat2d_plain(c.build, [*args[:4], "--iters", "2000"])
    out = os.path.join(c.tmp, "job.out")
    throttle, unthrottle = stretched(c)
    p = c.mpiexec([h1, h2], 2, [os.path.join(c.build, "examples/heat2d/heat2d_pcm"), *args,
                                "--iters", "2000", *throttle], out, env={"PCM_JOB": job})
    c.pcmctl("wait", job, "--iteration", "20", "--timeout", "120")
    done = 0


    # A host joins while the job runs; pcmd measures its round trip.
    c.pcmctl("host", "add", h3, "--slots", "2", "--site", "b")
    for _ in range(100):
        row = host_table(c).get(h3)
        if row and row.get("rtt") is not None:
            break
        time.sleep(0.1)
    else:
        raise Failure(f"pcmd lists no measured round trip for {h3}: {host_table(c)}")
    if row["slots"] != 2 or row["site"] != "b" or row["state"] != "up" or row["free"] != 2:
        raise Failure(f"host list shows {row} for {h3}")
    log(f"{h3} joined: rtt {row['rtt']} ms")
    c.pcmctl("split", job, "0", "--into", "2", "--host", h3)
    done += 1
    c.pcmctl("wait", job, "--reconfigurations", str(done), "--timeout", "180")
    expect_hosts(c, job, f"split onto {h3}", [h3, h3, h2])
    # Host 2 is drained: its process migrates to host 1 (free slots there), then host 2 leaves.
    r = c.pcmctl("host", "drain", h2, "--wait", timeout=300)
    done += 1
    expect_hosts(c, job, f"drain of {h2}", [h3, h3, h1])
    if h2 in host_table(c):
        raise Failure(f"{h2} is still in the inventory after its drain: {r.stdout}")
    # Host 1 is drained with no free slot anywhere else: its process is merged into rank 0.
    c.pcmctl("host", "drain", h1, "--wait", timeout=300)
    done += 1
    expect_hosts(c, job, f"drain of {h1}", [h3, h3])
    # Nowhere to go: the last host cannot be drained; a host in use cannot be removed.
    for cmd in (["drain", h3], ["remove", h3]):
        r = c.pcmctl("host", *cmd, check=False)
        if r.returncode != 1 or not r.stderr.strip():
            raise Failure(f"pcmctl host {' '.join(cmd)} exited {r.returncode}: {r.stderr}")
        log(f"host {' '.join(cmd)} refused: {r.stderr.strip()}")
    unthrottle()
    text = wait_job(c, job, p, out, done)
    m = re.search(r"^checksum (\w+)", text, re.M)
    if not m or m.group(1) != plain:
        raise Failure(f"checksum {m.group(1) if m else None} differs from the plain run's {plain}")
    c.pcmctl("host", "remove", h3)  # empty now
    if host_table(c):
        raise Failure(f"the inventory should be empty: {host_table(c)}")
    log(f"ok: drain: {h3} joined, {h2} drained by migration, {h1} by merge, checksum as plain")


def scenario_topology(c):
    h1, h2, h3 = c.names
    site = {h1: "west", h2: "west", h3: "east"}
    c.start_pcmd("--hosts", f"{h1}:2", f"{h2}:2", f"{h3}:2")
    for h in c.names:
        c.pcmctl("host", "add", h, "--slots", "2", "--site", site[h])
    job = "mh-topo"
    # At least 10 s (2 ms an iteration) for the steps, which take 2 s unloaded; the last step brings
    # the job back to two processes on one host, so the iterations after it are quick.
    units, iters = 997, 5000
    out = os.path.join(c.tmp, "job.out")
    p = c.mpiexec([h1, h2], 2, [os.path.join(c.build, "topology"), str(units), str(iters), "2000"],
                  out, env={"PCM_JOB": job})
    line_re = re.compile(r"^topo: iter (\d+) rank (\d+) size (\d+) host (\S+) addr (\S+) "
                         r"site_color (\d+) host_color (\d+)$", re.M)

    last = [-1]  # the iteration of the world checked last

    def check_world(what):
        """The lines of the newest world agree with the addresses and with pcmctl status."""
        hosts = c.status(job)["hosts"]
        for _ in range(300):
            rows = [tuple(m) for m in line_re.findall(open(out).read())]
            newest = max((int(r[0]) for r in rows), default=-1)
            world = {int(r[1]): r for r in rows if int(r[0]) == newest}
            if newest > last[0] and len(world) == len(hosts):
                break
            time.sleep(0.1)
        else:
            raise Failure(f"{what}: the {len(hosts)} processes did not all report where they are")
        last[0] = newest
        for r, (_, _, _, host, addr, sc, hc) in sorted(world.items()):
            real = c.host_of_addr.get(addr)
            if real != host or real != hosts[r]:
                raise Failure(f"{what}: rank {r} runs at {addr} ({real}), says {host}, "
                              f"pcmctl says {hosts[r]}")
            want_hc = min(q for q in world if world[q][3] == host)
            want_sc = min(q for q in world if site[world[q][3]] == site[host])
            if (int(hc), int(sc)) != (want_hc, want_sc):
                raise Failure(f"{what}: rank {r} on {host}: colours site {sc} host {hc}, "
                              f"expected {want_sc} {want_hc}")
        log(f"{what}: {[world[r][3] for r in sorted(world)]} colours "
            f"{[(int(world[r][5]), int(world[r][6])) for r in sorted(world)]}")

    c.pcmctl("wait", job, "--iteration", "20", "--timeout", "120")
    check_world("start")
    steps = [["migrate", job, "1", "--host", h3], ["split", job, "0", "--into", "2", "--host", h2],
             ["merge", job, "1", "2"], ["resize", job, "--to", "4", "--placement", "spread"],
             ["resize", job, "--to", "2"]]
    for done, cmd in enumerate(steps, start=1):
        c.pcmctl(*cmd)
        c.pcmctl("wait", job, "--reconfigurations", str(done), "--timeout", "180")
        check_world(" ".join(cmd[:1] + cmd[2:]))
    text = wait_job(c, job, p, out, len(steps))
    m = re.search(r"^sum (\d+) expected (\d+)$", text, re.M)
    if not m or m.group(1) != m.group(2):
        raise Failure(f"the final sum is wrong: {m.group(0) if m else text[-2000:]}")
    log(f"ok: topology: colours and hosts agree with the addresses after every kind of "
        f"reconfiguration; hierarchical sums equal flat ones; sum {m.group(1)}")


def scenario_policy(c):
    """The paper's Figures 9 and 10 without a person (pcmd --policy auto, short intervals): heat2d
    starts on host 1 (one slot); host 2's agent starts and the job grows onto it by itself, and
    the growth is measured and kept (with --policy-min-gain -0.9: on a machine busy with other
    work two processes may iterate slower than one, and the test checks the mechanism; whether a
    growth pays is bench/policy.py's figure); a competing program starts on host 2 and the job
    leaves it (a merge: no other free slot); the program ends and the job grows again; host 2's
    agent stops and the job is drained off it before the host leaves. Every decision is in the
    job's events with its reason, and each reconfiguration's row in heat2d's --trace ends with the
    reason pcmd sent the job (PCM_Reconfig_reason); the grid is the plain run's, bit for bit."""
    h1, h2 = c.names
    c.start_pcmd("--hosts", f"{h1}:1", "--policy", "auto", "--policy-interval-s", "3",
                 "--policy-measure-s", "5", "--policy-sustain-s", "2", "--policy-min-gain", "-0.9",
                 "--agent-timeout-ms", "3000")
    job = "mh-policy"
    args = ["--nx", "1024", "--ny", "256", "--iters", "250000"]
    out = os.path.join(c.tmp, "job.out")
    trace = os.path.join(c.tmp, "trace.csv")
    p = c.mpiexec([h1], 1, [os.path.join(c.build, "examples/heat2d/heat2d_pcm"), *args,
                            "--trace", trace], out, env={"PCM_JOB": job})
    c.pcmctl("wait", job, "--iteration", "20", "--timeout", "120")
    t_start = time.monotonic()
    timeline = []

    def events():
        return c.status(job)["events"]

    def wait_event(what, pattern, after, timeout=60):
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            ev = events()
            for e in ev[after:] if after <= len(ev) else ev:
                if re.search(pattern, e):
                    dt = time.monotonic() - t0
                    timeline.append((time.monotonic() - t_start, what, e))
                    log(f"{what} after {dt:.1f} s: {e}")
                    return len(ev), dt
            if p.poll() is not None:
                raise Failure(f"mpiexec ended ({p.returncode}) while waiting for {what}: "
                              f"{open(out).read()[-2000:]}; pcmd: {c.status(job)}")
            time.sleep(0.2)
        raise Failure(f"no {what} within {timeout} s; events: {events()}")

    n = len(events())
    agent, apid = start_host_agent(c, h2, "policy")
    n, t_grow = wait_event("growth onto the new host", r"policy: resize to 2", n)
    n, _ = wait_event("the growth kept", r"policy: growth to 2 kept", n)
    expect_hosts(c, job, "the growth", [h1, h2])
    # One word: the launcher joins its words with spaces and runs them with a shell, as ssh does.
    burner = subprocess.Popen(["bash", LAUNCHER, h2, "exec python3 -c 'while True: pass'"],
                              env=c.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    c.jobs.append(burner)
    n, t_leave = wait_event("leaving the loaded host", rf"policy: merge .* {h2} is loaded", n)
    c.pcmctl("wait", job, "--reconfigurations", "2", "--timeout", "60")
    os.killpg(burner.pid, signal.SIGKILL)
    burner.wait()
    n, t_back = wait_event("growth after the load ended", r"policy: resize to 2", n)
    c.pcmctl("wait", job, "--reconfigurations", "3", "--timeout", "60")
    os.kill(apid, signal.SIGTERM)
    if agent.wait(timeout=120) != 0:
        raise Failure("the agent did not leave cleanly")
    n, _ = wait_event("drain of the host that leaves", rf"drain of {h2}", 0)
    c.pcmctl("wait", job, "--reconfigurations", "4", "--timeout", "60")
    expect_hosts(c, job, f"{h2} left", [h1])
    log("events:\n  " + "\n  ".join(events()))
    plain = heat2d_plain(c.build, args)
    text = wait_job(c, job, p, out, 4)
    m = re.search(r"^checksum (\w+)", text, re.M)
    if not m or m.group(1) != plain:
        raise Failure(f"checksum {m.group(1) if m else None} differs from the plain run's {plain}")
    # The job was told why: each reconfiguration's row in heat2d's trace ends with the reason.
    with open(trace) as f:
        rows = [r["event"] for r in csv.DictReader(f) if r["event"] and r["event"] != "start"]
    want = [r"^split 1->2 .*; policy: .*free slot", r"^merge 2->1 .*; policy: host .* is loaded",
            r"^split 1->2 .*; policy: .*free slot", rf"^(merge 2->1|migrate 2->2) .*; drain of {h2}"]
    if len(rows) != 4 or not all(re.search(w, r) for w, r in zip(want, rows)):
        raise Failure(f"the trace's reconfiguration rows do not give the reasons: {rows}")
    log(f"ok: policy: grew onto {h2} {t_grow:.1f} s after its agent joined, left it "
        f"{t_leave:.1f} s after the load started, came back {t_back:.1f} s after it ended, "
        f"drained when its agent stopped; checksum as plain")


def scenario_agents(c):
    """Host agents (pcmd --agent): host 2's agent joins the inventory by itself; a process moves
    there; the agent is stopped (SIGTERM): pcmd drains host 2 (the process moves back) and the
    agent exits once the host has left. An agent started again joins again; killed (-9), it falls
    silent: after --agent-timeout-ms pcmd marks host 2 lost and drains it. The grid is the plain
    run's, bit for bit."""
    h1, h2 = c.names
    timeout_ms = 2000
    c.start_pcmd("--hosts", f"{h1}:4", "--agent-timeout-ms", str(timeout_ms))
    job = "mh-agents"
    args = ["--nx", "61", "--ny", "40"]
    plain = heat2d_plain(c.build, [*args, "--iters", "2000"])
    out = os.path.join(c.tmp, "job.out")
    throttle, unthrottle = stretched(c)
    p = c.mpiexec([h1], 2, [os.path.join(c.build, "examples/heat2d/heat2d_pcm"), *args,
                            "--iters", "2000", *throttle], out, env={"PCM_JOB": job})
    c.pcmctl("wait", job, "--iteration", "20", "--timeout", "120")
    done = 0


    def agent_and_move(tag, rank, want):
        """Starts host 2's agent, then moves rank there; returns (agent, its pid)."""
        nonlocal done
        agent = start_host_agent(c, h2, tag)
        c.pcmctl("migrate", job, str(rank), "--host", h2)
        done += 1
        c.pcmctl("wait", job, "--reconfigurations", str(done), "--timeout", "180")
        expect_hosts(c, job, f"migration to {h2}", want)
        return agent

    a, pid = agent_and_move("first", 1, [h1, h2])
    t0 = time.monotonic()
    os.kill(pid, signal.SIGTERM)
    try:
        rc = a.wait(timeout=120)
    except subprocess.TimeoutExpired:
        raise Failure(f"the agent did not leave within 120 s of SIGTERM")
    done += 1
    left = time.monotonic() - t0
    if rc != 0:
        raise Failure(f"the agent exited {rc}: {open(os.path.join(c.tmp, 'agent-first.log')).read()}")
    expect_hosts(c, job, f"{h2}'s agent left", [h1, h1])
    if h2 in host_table(c):
        raise Failure(f"{h2} is still in the inventory after its agent left")
    log(f"SIGTERM to {h2}'s agent: drained and left in {left:.2f} s")
    a, pid = agent_and_move("second", 0, [h2, h1])
    t0 = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    lost_at = None
    while time.monotonic() - t0 < 60:
        row = host_table(c).get(h2)
        if lost_at is None and (row is None or row["state"] == "lost"):
            lost_at = time.monotonic() - t0
        if row is None:
            break
        time.sleep(0.1)
    else:
        raise Failure(f"{h2} did not leave after its agent was killed: {host_table(c).get(h2)}")
    done += 1
    # Its last report came at most one period (0.5 s) before it died.
    if lost_at < timeout_ms / 1000 - 0.6:
        raise Failure(f"{h2} was marked lost {lost_at:.2f} s after its agent died, before the "
                      f"{timeout_ms} ms timeout")
    expect_hosts(c, job, f"{h2} lost", [h1, h1])
    log(f"agent killed: {h2} lost after {lost_at:.2f} s (timeout {timeout_ms} ms), drained and "
        f"gone after {time.monotonic() - t0:.2f} s")
    unthrottle()
    text = wait_job(c, job, p, out, done)
    m = re.search(r"^checksum (\w+)", text, re.M)
    if not m or m.group(1) != plain:
        raise Failure(f"checksum {m.group(1) if m else None} differs from the plain run's {plain}")
    log("ok: agents: joined, drained on SIGTERM, lost when silent, checksum as plain")


SCENARIOS = {
    "agents": (2, scenario_agents),
    "policy": (2, scenario_policy),
    "topology": (3, scenario_topology),
    "reconfig": (3, scenario_reconfig),
    "failure": (3, scenario_failure),
    "drain": (3, scenario_drain),
}


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in SCENARIOS:
        print(f"usage: {sys.argv[0]} BUILD {{{'|'.join(SCENARIOS)}}}", file=sys.stderr)
        return 2
    build, name = os.path.abspath(sys.argv[1]), sys.argv[2]
    n, fn = SCENARIOS[name]
    cluster.MPI_FAMILY = mpi_family()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    return run_on_cluster(build, n, fn, f"multihost {name}")


if __name__ == "__main__":
    sys.exit(main())
