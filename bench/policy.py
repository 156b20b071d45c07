#!/usr/bin/env python3
"""policy.py BUILD — the paper's Figures 9 and 10 with pcmd's own policy (pcmd --policy auto).

Runs on two network-namespace hosts (testbed/cluster.py's Cluster; each host pinned to a CPU of
its own where the machine has two). pcmd runs in host 1 with --policy auto and knows host 1 only
(one slot). Timeline, each phase a fixed span of wall-clock time:
  warm     heat2d_pcm starts on 1 process on host 1;
  grow     host 2's agent starts (`pcmd --agent`): the policy should grow the job onto it, measure
           and keep the growth;
  steady   nothing happens for BENCH_STEADY_S seconds: the policy must not reconfigure (counted);
  load     a competing program (a busy loop) starts on host 2: the job should leave host 2;
  back     the program ends: the job should grow onto host 2 again;
  leave    host 2's agent is stopped (SIGTERM): the job is drained off host 2 before it goes;
  tail     the job runs to its end on host 1.
Before the policy's job, heat2d_pcm runs launched at 1 process (host 1) and at 2 (hosts 1 and 2),
side by side with the same grid, for the baseline rates; the one at 2 runs again afterwards.
The job's iteration count is sized from them so that it ends shortly after the last phase.

Prints: the time from each resource event to the policy's decision and to the reconfiguration
done (the trace's event row); the policy's decisions with their reasons (pcmd's events, timed);
throughput on 2 processes after the policy's growth against the job launched at 2; the number of
reconfigurations over the steady stretch (must be 0); the final checksum against plain heat2d's.
Writes trace.csv (heat2d's), events.csv, trace-plot.csv (the trace with each reason in a few
words) and timeline.png (bench/plots/timeline.gp) to BENCH_OUT, and a copy
of the plot to BENCH_PNG when set. Exits 77 (SKIPPED) where namespaces cannot be made.

Environment: BENCH_NX/BENCH_NY (1024 x 512), BENCH_STEADY_S (180), BENCH_INTERVAL_S (5: pcmd's
--policy-interval-s), BENCH_MEASURE_S (5), BENCH_SUSTAIN_S (3), BENCH_OUT, BENCH_PNG.
"""
import csv
import os
import re
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "testbed"))
import benchlib  # noqa: E402  (bench/, this file's directory)
import cluster  # noqa: E402
from cluster import Failure, LAUNCHER  # noqa: E402

NX = os.environ.get("BENCH_NX", "1024")
NY = os.environ.get("BENCH_NY", "512")
STEADY_S = float(os.environ.get("BENCH_STEADY_S", "180"))
INTERVAL_S = float(os.environ.get("BENCH_INTERVAL_S", "5"))
MEASURE_S = float(os.environ.get("BENCH_MEASURE_S", "5"))
SUSTAIN_S = float(os.environ.get("BENCH_SUSTAIN_S", "3"))


def log(msg):
    print(f"bench_policy: {msg}", flush=True)


def read_trace(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def rates(rows, procs, t0=0.0, t1=float("inf")):
    """Iterations/s of the trace's progress intervals with `procs` processes inside [t0, t1]."""
    return [1000.0 / float(r["ms_per_iter"]) for r in rows
            if r["ms_per_iter"] and int(r["procs"]) == procs and t0 <= float(r["time_s"]) <= t1]


def short(reason):
    """A reason in a few words, for the plot: "policy: h2 free", "policy: h2 loaded"."""
    patterns = [
        (r"policy: growth to (\d+) kept: .*\(([+-]\d+) %", "policy: {0} kept ({1} %)"),
        (r"policy: undo the growth to (\d+)", "policy: undo"),
        (r"policy: (\S+) has a free slot", "policy: {0} free"),
        (r"policy: host (\S+) is loaded", "policy: {0} loaded"),
        (r"(drain of \S+)", "{0}"),
    ]
    for pat, fmt in patterns:
        m = re.search(pat, reason)
        if m:
            return fmt.format(*m.groups())
    return reason[:30]


def run(c):
    h1, h2 = c.names
    out_dir = os.environ.get("BENCH_OUT") or os.path.join(c.build, "bench-policy")
    os.makedirs(out_dir, exist_ok=True)
    trace = os.path.join(out_dir, "trace.csv")
    events_csv = os.path.join(out_dir, "events.csv")
    for f in (trace, events_csv):
        if os.path.exists(f):
            os.remove(f)
    c.start_pcmd("--hosts", f"{h1}:1", "--policy", "auto", "--policy-interval-s", str(INTERVAL_S),
                 "--policy-measure-s", str(MEASURE_S), "--policy-sustain-s", str(SUSTAIN_S),
                 "--agent-timeout-ms", "3000")
    heat_pcm = os.path.join(c.build, "examples/heat2d/heat2d_pcm")
    grid = ["--nx", NX, "--ny", NY]

    def launched(tag, hosts, np, iters):
        """heat2d_pcm launched at np processes over hosts; its median iterations/s."""
        path = os.path.join(c.tmp, f"{tag}.csv")
        out = os.path.join(c.tmp, f"{tag}.out")
        p = c.mpiexec(hosts, np, [heat_pcm, *grid, "--iters", str(iters), "--trace", path], out,
                      env={"PCM_JOB": tag}, spawn_hosts=[])
        if p.wait(timeout=600) != 0:
            raise Failure(f"{tag} exited {p.returncode}: {open(out).read()[-2000:]}")
        r = rates(read_trace(path), np)
        if len(r) < 3:
            raise Failure(f"{tag}: too few trace rows ({len(r)}) to measure")
        return benchlib.median(r)

    # Baselines, and the iterations of a few seconds for sizing.
    probe = launched("probe1", [h1], 1, 300)
    base_iters = max(300, int(probe * 8))  # about 8 s on 1 process
    rate1 = launched("launched1", [h1], 1, base_iters)
    rate2 = launched("launched2a", [h1, h2], 2, 2 * base_iters)
    log(f"heat2d {NX}x{NY} launched at 1 process: {rate1:.0f} it/s; at 2 (hosts {h1}, {h2}): "
        f"{rate2:.0f} it/s")

    # The phases' spans (s). A reconfiguration must be done within its phase.
    span = {"warm": 5.0, "grow": INTERVAL_S + MEASURE_S + 10, "steady": STEADY_S,
            "load": max(20.0, SUSTAIN_S + INTERVAL_S + 10), "back": INTERVAL_S + MEASURE_S + 10,
            "leave": 10.0}
    t_one = span["warm"] + span["load"] + span["leave"]
    t_two = span["grow"] + span["steady"] + span["back"]
    # About rate2 while on 2 processes (8 % more for noise), so the job outlives the phases.
    total = int(1.08 * (rate1 * t_one + rate2 * t_two)) + int(5 * rate1)
    job = "bench-policy"
    out = os.path.join(c.tmp, "job.out")
    report = max(1, int(rate2 / 4))  # a trace row about every 0.25 s on 2 processes
    p = c.mpiexec([h1], 1, [heat_pcm, *grid, "--iters", str(total), "--report", str(report),
                            "--trace", trace], out, env={"PCM_JOB": job})
    c.pcmctl("wait", job, "--iteration", str(report), "--timeout", "120")
    outside = []  # (epoch s, label)

    def mark(label):
        outside.append((time.time(), label))
        log(f"{label}")

    def status():
        return c.status(job)

    def sleep_until(t_end):
        while time.time() < t_end:
            if p.poll() is not None:
                raise Failure(f"the job ended ({p.returncode}) before the phases did: "
                              f"{open(out).read()[-2000:]}")
            time.sleep(0.2)

    phase_end = time.time() + span["warm"]
    sleep_until(phase_end)
    checks = []  # (phase, event time, reconfigurations before, wanted size after)

    agent, apid = cluster.start_host_agent(c, h2, "bench")
    mark(f"{h2} joins")
    checks.append(("grow", outside[-1][0], status()["reconfigurations"], 2))
    phase_end += span["grow"]
    sleep_until(phase_end)
    st = status()
    if st["size"] != 2:
        raise Failure(f"the job did not grow onto {h2} within {span['grow']:.0f} s: {st['events']}")
    steady_from, steady_reconf = time.time(), st["reconfigurations"]
    mark("steady stretch starts")
    phase_end += span["steady"]
    sleep_until(phase_end)
    st = status()
    steady_to, steady_count = time.time(), st["reconfigurations"] - steady_reconf
    mark("steady stretch ends")

    burner = subprocess.Popen(["bash", LAUNCHER, h2, "exec python3 -c 'while True: pass'"],
                              env=c.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    c.jobs.append(burner)
    mark("competing load starts")
    checks.append(("load", outside[-1][0], st["reconfigurations"], 1))
    phase_end += span["load"]
    sleep_until(phase_end)
    os.killpg(burner.pid, signal.SIGKILL)
    burner.wait()
    st = status()
    mark("competing load ends")
    checks.append(("back", outside[-1][0], st["reconfigurations"], 2))
    phase_end = time.time() + span["back"]
    sleep_until(phase_end)
    st = status()
    os.kill(apid, signal.SIGTERM)
    mark(f"{h2} leaves")
    checks.append(("leave", outside[-1][0], st["reconfigurations"], 1))
    if agent.wait(timeout=120) != 0:
        raise Failure("the agent did not leave cleanly")
    text = cluster.wait_job(c, job, p, out, None, timeout=900)
    final = status()
    rate2b = launched("launched2b", [h1, h2], 2, 2 * base_iters)

    # The figures.
    rows = read_trace(trace)
    reconf_rows = [r for r in rows if not r["ms_per_iter"] and r["event"].split()[:1] != ["start"]]
    ev_times = final.get("event_times", [])
    decisions = [(t, e) for t, e in zip(ev_times, final["events"]) if e.startswith("policy:") or
                 e.startswith("drain of")]
    with open(events_csv, "w") as f:
        f.write("time_s,label\n")
        for t, label in outside:
            if "stretch" not in label:
                f.write(f"{t:.6f},{label}\n")
        for t, e in decisions:  # the decisions that are not a reconfiguration of their own
            if " kept: " in e:
                f.write(f"{t:.6f},{short(e)}\n")
    # The plot's copy of the trace: each reconfiguration's reason in a few words.
    plotted = os.path.join(out_dir, "trace-plot.csv")
    with open(plotted, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        for r in rows:
            if "; " in r["event"]:
                head, why = r["event"].split("; ", 1)
                r = dict(r, event=f"{' '.join(head.split()[:2])} ({short(why)})")
            w.writerow(r)
    t0 = float(rows[0]["time_s"])
    print()
    print(f"bench_policy: heat2d {NX}x{NY}, hosts {h1} (1 slot) and {h2} (its agent: 1 slot), "
          f"pcmd --policy auto --policy-interval-s {INTERVAL_S:g} --policy-measure-s "
          f"{MEASURE_S:g} --policy-sustain-s {SUSTAIN_S:g}")
    print("1. resource event -> the policy's decision -> reconfiguration done (s):")
    for phase, t_ev, before, want in checks:
        after = [r for r in reconf_rows if float(r["time_s"]) > t_ev]
        dec = [t for t, e in decisions if t > t_ev and not e.startswith("policy: growth")]
        if not after:
            raise Failure(f"{phase}: no reconfiguration after the event")
        done = float(after[0]["time_s"]) - t_ev
        decided = (dec[0] - t_ev) if dec else float("nan")
        procs = int(after[0]["procs"])
        if procs != want:
            raise Failure(f"{phase}: the first reconfiguration after the event left {procs} "
                          f"processes, wanted {want}: {after[0]['event']}")
        print(f"   {phase:6s} {decided:6.1f} {done:6.1f}   {after[0]['event'].split(';')[0]}")
    print("2. the policy's decisions (s from the job's start; pcmd's events):")
    for t, e in decisions:
        print(f"   {t - t0:7.1f}  {e}")
    steady = rates(rows, 2, steady_from, steady_to)
    after_growth = benchlib.median(steady)
    base = benchlib.median([rate2, rate2b])
    print(f"3. throughput on 2 processes: after the policy's growth {after_growth:.0f} it/s "
          f"(median of {len(steady)} intervals of the steady stretch); launched at 2: "
          f"{rate2:.0f} before, {rate2b:.0f} after; ratio {after_growth / base:.2f}; "
          f"on 1 process {rate1:.0f} it/s ({after_growth / rate1:.2f}x)")
    print(f"4. reconfigurations over the steady stretch of {steady_to - steady_from:.0f} s: "
          f"{steady_count}")
    m = re.search(r"^checksum (\w+)", text, re.M)
    plain = cluster.heat2d_plain(c.build, [*grid, "--iters", str(total)])
    same = m is not None and m.group(1) == plain
    print(f"5. {total} iterations, {final['reconfigurations']} reconfigurations; checksum "
          f"{m.group(1) if m else None} {'equals' if same else 'DIFFERS FROM'} plain heat2d's")
    png = os.path.join(out_dir, "timeline.png")
    benchlib.plot("timeline", plotted, events_csv, png,
                  f"heat2d {NX}x{NY} under pcmd --policy auto: {h2} joins, is loaded, is freed, "
                  "leaves")
    if os.environ.get("BENCH_PNG"):
        shutil.copyfile(png, os.environ["BENCH_PNG"])
    print(f"   plot {png}")
    if not same:
        raise Failure("the final grid differs from the plain run's")
    if steady_count != 0:
        raise Failure(f"{steady_count} reconfigurations over the steady stretch")


def main():
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} BUILD", file=sys.stderr)
        return 2
    cluster.MPI_FAMILY = cluster.mpi_family()
    return cluster.run_on_cluster(os.path.abspath(sys.argv[1]), 2, run, "bench_policy")


if __name__ == "__main__":
    sys.exit(main())
