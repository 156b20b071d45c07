#!/usr/bin/env python3
"""recover.py BUILD [--kills K] [--seed S] — a job that loses a whole host finishes by itself.

On three namespace hosts (testbed/hosts.sh; host 3 with two slots), `pcmctl run --on-inventory`
supervises heat2d_pcm (a version every 100 iterations) from host 1. K times, on a fresh job each
time, host 3 is powered off at a moment the seed picks: all its processes are stopped (SIGSTOP),
its link goes down, and only then are they killed (its MPI proxy last), so that no FIN or RST
reaches anyone, as in a power or switch failure. The moments:

  early       before the first version (the job starts again from the beginning)
  between     between two versions
  checkpoint  as a version is due (its iteration reached)
  split       while a split onto host 3 is in flight
  split_new   the job on hosts 1 and 2 only, while a split of rank 1 onto host 3 is in flight
              (its new process alone there: given up by the old world, or recovered)
  merge       while a merge of host 3's process into host 2's is in flight

Each time the job must finish with pcmctl run's exit 0 and the plain run's checksum, relaunched
on the two hosts that still answer, and its events must hold the recovery with its timings and
a loss seen by pcmd, not by the reconfiguration watchdog. Prints, per kill, the moment, where
the job stood, the version it restarted from, the iterations computed twice and the recovery's
timings (from the power-off too); a summary at the end. Between kills host 3 comes back
(link up) for the next job. Exits 77 (SKIPPED) without root or on Open MPI (pcmctl run passes
the hosts as hydra's -hosts here).
"""
import argparse
import os
import random
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testbed"))
import cluster as mh  # noqa: E402
from cluster import iteration, revive_host, supervised  # noqa: E402

MOMENTS = ["between", "split", "early", "merge", "checkpoint", "split_new"]
ARGS = ["--nx", "97", "--ny", "64", "--iters", "1500"]


def log(msg):
    print(f"recover: {msg}", flush=True)


def strike(c, job, moment, rng):
    """Waits for the moment of the job's run, then kills host 3; returns the iteration the job
    had reached as it died (as pcmd last saw it)."""
    h1, h2, h3 = c.names
    if moment == "early":
        c.pcmctl("wait", job, "--iteration", str(rng.randint(10, 60)), "--timeout", "120")
    elif moment == "between":
        c.pcmctl("wait", job, "--iteration", str(rng.randint(130, 570)), "--timeout", "120")
    elif moment == "checkpoint":
        c.pcmctl("wait", job, "--iteration", str(100 * rng.randint(1, 5)), "--timeout", "120")
    else:
        c.pcmctl("wait", job, "--iteration", str(rng.randint(120, 400)), "--timeout", "120")
        if moment in ("split", "split_new"):
            # pcmd places the split on host 3 once it has seen the host answer again since its
            # last power-off (silent until then, up to a probe's 3 s after it came back; pcmctl
            # run's own probe may have started the job there before).
            t0 = time.monotonic()
            while mh.host_table(c).get(h3, {}).get("state") != "up":
                if time.monotonic() - t0 > 60:
                    raise mh.Failure(f"pcmd does not list {h3} up within 60 s of its return: "
                                     f"{mh.host_table(c).get(h3)}")
                time.sleep(0.1)
        cmd = {"split": ["split", job, "2", "--into", "2", "--host", h3],
               "split_new": ["split", job, "1", "--into", "2", "--host", h3],
               "merge": ["merge", job, "1", "2"]}[moment]
        c.pcmctl(*cmd)
        # A random moment of the reconfiguration (a merge takes about 0.06 s, a split longer).
        time.sleep(rng.uniform(0, 0.12 if moment == "merge" else 0.3))
    at = iteration(c, job)
    n = mh.kill_host(h3, power_off=True)
    log(f"{job}: powered {h3} off ({moment}: {n} processes stopped, its link cut, then killed) "
        f"at about iteration {at}")
    return at, time.time()


def one_kill(c, k, moment, rng, plain):
    h1, h2, h3 = c.names
    job = f"rc{k}"
    out = os.path.join(c.tmp, "job.out")  # run_on_cluster shows it on a failure
    np = 2 if moment == "split_new" else 3
    run = supervised(c, job, np, out,
                     ["--min", "1", "--max-restarts", "2", "--start-timeout-s", "60",
                      "--finish-grace-s", "5"],
                     [*ARGS, "--commit-every", "100", "--throttle-us", "2000"])
    c.pcmctl("wait", job, "--iteration", "1", "--timeout", "120")
    if c.status(job)["hosts"] != [h1, h2, h3][:np]:
        raise mh.Failure(f"{job} starts on {c.status(job)['hosts']}, expected "
                         f"{[h1, h2, h3][:np]}")
    at, off = strike(c, job, moment, rng)
    try:
        rc = run.wait(timeout=400)
    except subprocess.TimeoutExpired:
        st = c.pcmctl("status", job, check=False).stdout
        ps = subprocess.run(["ps", "-e", "-o", "pid,pgid,stat,etime,args"], capture_output=True,
                            text=True).stdout
        ps = "\n".join(x for x in ps.splitlines() if "heat2d" in x or "mpiexec" in x or
                       "hydra" in x or "pcmctl" in x)
        raise mh.Failure(f"{job}: pcmctl run did not end within 400 s of the kill (hung);\n"
                         f"{st}\n{ps}")
    text = open(out).read()
    if rc != 0:
        raise mh.Failure(f"{job}: pcmctl run exited {rc}:\n{text[-3000:]}")
    m = re.search(r"^checksum (\w+)", text, re.M)
    if not m or m.group(1) != plain:
        raise mh.Failure(f"{job}: checksum {m.group(1) if m else None}, plain {plain}")
    r = re.search(r"^heat2d: restarted from iteration (\d+) \((\d+) -> (\d+) processes\)", text,
                  re.M)
    events = c.pcmctl("events", job).stdout
    # The recovery off host 3 (normally the first; a run lost for another reason before the kill,
    # e.g. a launch that failed, is recovered too and counted).
    relaunch = re.search(rf"recovery (\d) of 2: the run was lost \((.*)\); relaunching on (\d+) "
                         rf"processes \(({h1}:1,{h2}:1)\)", events)
    back = relaunch and re.search(
        rf"recovery {relaunch.group(1)} of 2: iterating again ([\d.]+) s after the loss was seen "
        r".*relaunched ([\d.]+) s after it", events)
    if not relaunch and moment == "merge" and re.search(r"^heat2d: merge", text, re.M) and \
            c.status(job)["reconfigurations"] == 1 and not r:
        # The merge had moved host 3's process off (it was parked there) before the host died:
        # nothing to recover; pcmctl run ends a launcher stuck in MPI_Finalize.
        stuck = "launcher was still there" in events
        log(f"{job}: ok: merge: host 3 died after the merge had left it only a parked process "
            f"(at ~{at}); finished without a recovery{', its stuck launcher ended' if stuck else ''}"
            f"; checksum as plain")
        return {"moment": moment, "repeated": 0, "relaunch_s": 0, "resume_s": 0,
                "other_recoveries": 0, "after_off": None}
    if not relaunch and moment == "split_new":
        return given_up(job, text, events, at, off)
    if not relaunch or not back:
        raise mh.Failure(f"{job}: the events do not show the recovery:\n{events}")
    # The loss is seen by pcmd (a watch connection's keepalive, or the probes of a reconfiguring
    # job's hosts), never at the reconfiguration watchdog's deadline.
    if re.search(r"hung|watchdog|PCM_RECONFIG_TIMEOUT_S", relaunch.group(2)):
        raise mh.Failure(f"{job}: the loss was seen only by the watchdog:\n{events}")
    again = re.search(rf"^(\S+ \S+)  recovery {relaunch.group(1)} of 2: iterating again", events,
                      re.M)
    after_off = event_time(again.group(1)) - off
    others = int(relaunch.group(1)) - 1
    if others:
        log(f"{job}: note: {others} earlier recovery before host 3's loss:\n{events}")
    since = int(r.group(1)) if r else 0
    repeated = max(at - since, 0)
    log(f"{job}: ok: {moment}: lost at ~{at}, resumed from {'iteration ' + str(since) if r else 'the start'}"
        f" on {relaunch.group(3)} processes ({relaunch.group(4)}), {repeated} iterations "
        f"computed twice; relaunched {float(back.group(2)):.2f} s and iterating "
        f"{float(back.group(1)):.2f} s after the loss was seen ({relaunch.group(2)}), "
        f"{after_off:.1f} s after the power-off; checksum as plain")
    return {"moment": moment, "repeated": repeated, "relaunch_s": float(back.group(2)),
            "resume_s": float(back.group(1)), "other_recoveries": others, "after_off": after_off}


def event_time(line):
    """The wall-clock time of a line of `pcmctl events` ("YYYY-MM-DD HH:MM:SS.mmm  text")."""
    return time.mktime(time.strptime(line[:19], "%Y-%m-%d %H:%M:%S")) + float("0" + line[19:23])


def given_up(job, text, events, at, off):
    """split_new without a recovery: the old world gave the split up (its new process's host
    powered off) and the job went on on hosts 1 and 2; the give-up's time after the power-off."""
    failed = re.search(r"^(\S+ \S+)  split of rank 1 into 2 failed: (.*)$", events, re.M)
    if not failed or "given up" not in failed.group(2):
        raise mh.Failure(f"{job}: neither a recovery nor the split given up:\n{events}")
    if re.search(r"^heat2d: split", text, re.M):
        raise mh.Failure(f"{job}: heat2d says it split, but the split was given up:\n{text}")
    after_off = event_time(failed.group(1)) - off
    log(f"{job}: ok: split_new: powered off at ~{at} during the split onto it; the old world gave "
        f"the split up {after_off:.1f} s after the power-off ({failed.group(2)}) and finished on "
        f"hosts 1 and 2; checksum as plain")
    return {"moment": "split_new", "repeated": 0, "relaunch_s": 0, "resume_s": 0,
            "other_recoveries": 0, "after_off": after_off}


def scenario(c, kills, seed):
    h1, h2, h3 = c.names
    c.start_pcmd("--hosts", f"{h1}:1", f"{h2}:1", f"{h3}:2")
    plain = mh.heat2d_plain(c.build, ARGS)
    rng = random.Random(seed)
    results = []
    for k in range(kills):
        moment = MOMENTS[(seed + k) % len(MOMENTS)]
        results.append(one_kill(c, k, moment, rng, plain))
        revive_host(c, h3)
    rep = [r["repeated"] for r in results]
    res = sorted(r["resume_s"] for r in results if r["resume_s"] > 0) or [0]
    other = sum(r["other_recoveries"] for r in results)
    off = sorted(r["after_off"] for r in results if r["after_off"] is not None) or [0]
    by_moment = ", ".join(f"{r['moment']} {r['after_off']:.1f}" for r in results
                          if r["after_off"] is not None)
    log(f"ok: {kills} host power-offs (seed {seed}), none lost, none hung; iterations computed "
        f"twice: {sum(rep)} in all, at most {max(rep)}; iterating again after the loss was seen: "
        f"median {res[len(res) // 2]:.2f} s, at most {res[-1]:.2f} s; after the power-off: median "
        f"{off[len(off) // 2]:.1f} s, at most {off[-1]:.1f} s, {sum(x <= 15 for x in off)} of "
        f"{len(off)} within 15 s ({by_moment}); {other} recoveries from other losses")


def grow_back(c):
    """--policy auto: the job loses host 3, is relaunched on hosts 1 and 2, and grows back onto
    host 3 once it answers again; meanwhile pcmd lists host 3 silent and grows nothing there."""
    h1, h2, h3 = c.names
    c.start_pcmd("--hosts", f"{h1}:1", f"{h2}:1", f"{h3}:1", "--policy", "auto",
                 "--policy-interval-s", "2", "--policy-measure-s", "4", "--policy-sustain-s", "2")
    args = ["--nx", "97", "--ny", "64", "--iters", "3000"]
    plain = mh.heat2d_plain(c.build, args)
    flag = os.path.join(c.tmp, "throttle")  # 20 ms an iteration until the job has grown back
    open(flag, "w").close()
    job = "grow"
    out = os.path.join(c.tmp, "job.out")
    run = supervised(c, job, 3, out,
                     ["--min", "1", "--max-restarts", "2", "--start-timeout-s", "60",
                      "--finish-grace-s", "5"],
                     [*args, "--commit-every", "100", "--throttle-us", "20000",
                      "--throttle-while", flag])
    c.pcmctl("wait", job, "--iteration", "150", "--timeout", "120")
    n = mh.kill_host(h3, power_off=True)
    t0 = time.monotonic()
    log(f"{job}: powered {h3} off ({n} processes) at about iteration {iteration(c, job)}")
    silent = False
    while "iterating again" not in c.pcmctl("events", job).stdout:
        silent = silent or mh.host_table(c).get(h3, {}).get("state") == "silent"
        if time.monotonic() - t0 > 120 or run.poll() is not None:
            raise mh.Failure(f"{job} was not recovered:\n{c.pcmctl('events', job).stdout}")
        time.sleep(0.2)
    hosts = c.status(job)["hosts"]
    if h3 in hosts:
        raise mh.Failure(f"{job} was relaunched on {hosts}, with the dead {h3}")
    silent = silent or mh.host_table(c).get(h3, {}).get("state") == "silent"
    if not silent:
        raise mh.Failure(f"pcmd never listed {h3} silent: {mh.host_table(c).get(h3)}")
    log(f"{job}: recovered on {hosts} {time.monotonic() - t0:.1f} s after the kill; "
        f"{h3} listed silent")
    time.sleep(5)  # the policy's rounds meanwhile: nothing may grow onto the dead host
    if h3 in c.status(job)["hosts"]:
        raise mh.Failure(f"{job} grew onto the dead {h3}")
    revive_host(c, h3)
    t1 = time.monotonic()
    while h3 not in c.status(job)["hosts"]:
        if time.monotonic() - t1 > 90 or run.poll() is not None:
            raise mh.Failure(f"{job} did not grow back onto {h3} within 90 s of its return:\n"
                             f"{c.pcmctl('events', job).stdout}")
        time.sleep(0.2)
    log(f"{job}: grew back onto {h3} {time.monotonic() - t1:.1f} s after it answered again: "
        f"{c.status(job)['hosts']}")
    os.unlink(flag)
    try:
        rc = run.wait(timeout=300)
    except subprocess.TimeoutExpired:
        raise mh.Failure(f"{job}: pcmctl run did not end within 300 s")
    text = open(out).read()
    m = re.search(r"^checksum (\w+)", text, re.M)
    if rc != 0 or not m or m.group(1) != plain:
        raise mh.Failure(f"{job}: exit {rc}, checksum {m.group(1) if m else None} (plain {plain})"
                         f":\n{text[-3000:]}")
    events = c.pcmctl("events", job).stdout
    if not re.search(rf"policy: resize to 3 .*because {h3} has a free slot", events):
        raise mh.Failure(f"the events do not show the policy's growth onto {h3}:\n{events}")
    log(f"ok: grow back: lost {h3}, recovered on two hosts, grew back onto {h3} when it returned; "
        f"checksum as plain")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--kills", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--grow-back", action="store_true",
                    help="instead: one loss under pcmd --policy auto, and growth back")
    a = ap.parse_args()
    family = mh.mpi_family()
    if family != "mpich":
        print(f"SKIPPED: recover.py drives hydra's -hosts (the MPI here is {family})")
        return mh.SKIP
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if a.grow_back:
        return mh.run_on_cluster(os.path.abspath(a.build), 3, grow_back, "recover")
    return mh.run_on_cluster(os.path.abspath(a.build), 3,
                             lambda c: scenario(c, a.kills, a.seed), "recover")


if __name__ == "__main__":
    sys.exit(main())
