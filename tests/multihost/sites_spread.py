#!/usr/bin/env python3
"""sites_spread.py BUILD — a job spread across two sites through an open MPI port range, and a
relay lost under a job (issue 26 items 3-5).

testbed/sites.sh makes sites a, b and c of two hosts each, with TCP ports RANGE open between the
hosts of a and b (--open a:b:RANGE: routed through both front-ends, nftables accepting new
connections to those ports only) and nothing open to c. pcmd runs on a1 with --closed-sites
--site-link a:b:RANGE; site b reaches it through the front-ends' relays (sites.py). Each host has
its own configuration file at one path (launcher_hosts.sh's private directory): pcmd's on site a,
site b's (the relay's address) on site b. Then:

  - `pcmctl site-env` prints the range's variables;
  - heat2d_pcm starts under `pcmctl run` on a1,a2 (pcmctl run sets MPIR_CVAR_CH3_PORT_RANGE);
    a migration to site c is refused with the reason (no link, no open range); rank 1 migrates
    to b1 and splits onto b2: the job spans a and b, its ranks in b talking to pcmd through the
    relays and to site a through the open range; every TCP socket listening on site b's hosts,
    and every connection between a and b, uses a port of the range; the front-ends' firewalls
    accepted connections in the range and dropped nothing; the result equals the plain run's bit
    for bit;
  - a second job spans a and b the same way and site b's relay is killed by PID: pcmd sees the
    process on b1 lost within a bounded time, pcmctl run ends the run and relaunches it from the
    start on a1,a2, and the job finishes with the plain checksum.

Exits 77 (ctest SKIPPED) with the reason where namespaces cannot be made (no root) or nftables
is not installed.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testbed"))
import cluster  # noqa: E402
import site_cluster  # noqa: E402  (Sites, start_relayed, relay_site_b, main_with)
from cluster import Failure, log  # noqa: E402

LOW, HIGH = 50000, 50099
RANGE = f"{LOW}-{HIGH}"
ARGS = ["--nx", "61", "--ny", "40", "--iters", "2000"]


def local_configs(c):
    """One configuration file per host at one path: pcmd's on site a, site b's on site b (a site
    keeps its own file system). Returns the job's environment."""
    root = os.path.join(c.tmp, "local")
    for h in c.a + c.names:
        os.makedirs(os.path.join(root, h), mode=0o700)
        shutil.copy(c.config if h in c.a else c.site_config, os.path.join(root, h, "pcm.conf"))
    mnt = os.path.join(c.tmp, "etc-pcm")
    return dict(c.env, PCM_HOSTS_LOCAL_ROOT=root, PCM_HOSTS_LOCAL_MOUNT=mnt,
                PCM_CONFIG=os.path.join(mnt, "pcm.conf"))


def run_job(c, env, job, extra, out):
    """`pcmctl run -n 2` on a1, mpiexec over a1,a2 through the hosts' launcher."""
    mpiexec = os.environ.get("MPIEXEC", "mpiexec")
    launch = ["-launcher", "ssh", "-launcher-exec", cluster.LAUNCHER, "-hosts",
              f"{c.a[0]},{c.a[1]}"]
    cmd = [os.path.join(c.build, "pcmctl"), "run", "-n", "2", "--job", job, "--max-restarts",
           "1", "--mpiexec", mpiexec, *[f"--mpiexec-arg={a}" for a in launch], "--",
           os.path.join(c.build, "examples/heat2d/heat2d_pcm"), *ARGS, *extra]
    p = subprocess.Popen(["bash", cluster.LAUNCHER, c.a[0], " ".join(cmd)], env=env,
                         stdout=open(out, "w"), stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, start_new_session=True)
    c.jobs.append(p)
    return p


def in_range(port):
    return LOW <= int(port) <= HIGH


def check_ports(c):
    """Every TCP socket listening on site b's hosts is in the range, and so is, for every
    connection between a host of a and one of b, the port of its listening end."""
    a_addrs = {c.addr[h] for h in c.a}
    listening, crossing = {}, []
    for h in c.names:
        out = subprocess.run(["ip", "netns", "exec", h, "ss", "-Htn", "state", "listening"],
                             capture_output=True, text=True).stdout
        listening[h] = sorted(int(x.rsplit(":", 1)[1]) for x in
                              (line.split()[2] for line in out.splitlines()))
        out = subprocess.run(["ip", "netns", "exec", h, "ss", "-Htn", "state", "established"],
                             capture_output=True, text=True).stdout
        for line in out.splitlines():
            local, peer = line.split()[2:4]
            if peer.rsplit(":", 1)[0] in a_addrs:
                crossing.append((h, local, peer))
    bad = {h: [p for p in ports if not in_range(p)] for h, ports in listening.items()}
    if any(bad.values()) or not any(listening.values()):
        raise Failure(f"site b's hosts listen outside {RANGE}: {listening}")
    lports = {p for ports in listening.values() for p in ports}
    for h, local, peer in crossing:
        lp, pp = int(local.rsplit(":", 1)[1]), int(peer.rsplit(":", 1)[1])
        if not (in_range(pp) or (lp in lports and in_range(lp))):
            raise Failure(f"{h}: connection {local} <-> {peer} crosses sites outside {RANGE}")
    if not crossing:
        raise Failure("no TCP connection between the job's hosts of a and b")
    log(f"ports: site b listens on {listening}; {len(crossing)} connections between a and b, "
        f"each to a port in {RANGE}")


def firewall_counts(c, fe):
    """(accepted new connections in the range, packets dropped) of fe's forward chain."""
    out = subprocess.run(["ip", "netns", "exec", fe, "nft", "list", "chain", "inet", "pcmsites",
                          "forward"], capture_output=True, text=True).stdout
    accepted = sum(int(x) for x in re.findall(r"dport \d+-\d+ ct state new counter packets (\d+)",
                                              out))
    dropped = re.search(r"^\s*counter packets (\d+) bytes \d+ drop", out, re.M)
    return accepted, int(dropped.group(1)) if dropped else None


def checksum(text, plain, what):
    m = re.search(r"^checksum (\w+)", text, re.M)
    if not m or m.group(1) != plain:
        raise Failure(f"{what}: checksum {m.group(1) if m else None}, plain {plain}:\n"
                      f"{text[-3000:]}")


def spread(c, env, plain):
    a1, a2 = c.a
    b1, b2 = c.names
    job = "spread-heat"
    out = os.path.join(c.tmp, "job.out")
    throttle, unthrottle = cluster.stretched(c)
    p = run_job(c, env, job, throttle, out)
    c.pcmctl("wait", job, "--iteration", "20", "--timeout", "120")
    text = open(out).read()
    if f"MPIR_CVAR_CH3_PORT_RANGE={LOW}:{HIGH}" not in text:
        raise Failure(f"pcmctl run did not set the port range: {text[-2000:]}")
    c1 = c.site_hosts["c"][0]
    r = c.pcmctl("migrate", job, "1", "--host", c1, check=False)
    if r.returncode == 0 or "span sites a" not in r.stderr or "--site-link" not in r.stderr:
        raise Failure(f"a migration to site c was not refused with the reason: {r.stderr}")
    log(f"refused: {r.stderr.strip()}")
    steps = [(["migrate", job, "1", "--host", b1], [a1, b1]),
             (["split", job, "1", "--into", "2", "--host", b2], [a1, b2, b2])]
    for done, (cmd, want) in enumerate(steps, start=1):
        t0 = time.monotonic()
        c.pcmctl(*cmd)
        c.pcmctl("wait", job, "--reconfigurations", str(done), "--timeout", "120")
        cluster.expect_hosts(c, job, f"{' '.join(cmd)} ({time.monotonic() - t0:.1f} s)", want)
        check_ports(c)
    unthrottle()
    rc = p.wait(timeout=120)
    text = open(out).read()
    if rc != 0 or c.status(job)["state"] != "finished":
        raise Failure(f"pcmctl run exited {rc}, pcmd shows {c.status(job)}:\n{text[-3000:]}")
    checksum(text, plain, "the spread job")
    counts = {fe: firewall_counts(c, c.fe[fe]) for fe in "ab"}
    if any(acc == 0 or drop != 0 for acc, drop in counts.values()):
        raise Failure(f"front-end firewalls (accepted, dropped): {counts}")
    log(f"firewalls (new connections accepted in {RANGE}, packets dropped): {counts}")
    log(f"ok: a job spread over sites a and b, checksum {plain} as plain")


def relay_lost(c, env, plain):
    b1 = c.names[0]
    job = "relay-lost"
    out = os.path.join(c.tmp, "lost.out")
    throttle, unthrottle = cluster.stretched(c)
    p = run_job(c, env, job, throttle, out)
    c.pcmctl("wait", job, "--iteration", "20", "--timeout", "120")
    c.pcmctl("migrate", job, "1", "--host", b1)
    c.pcmctl("wait", job, "--reconfigurations", "1", "--timeout", "120")
    cluster.expect_hosts(c, job, f"migrate {job} 1 --host {b1}", [c.a[0], b1])
    pidfile = next(pf for pf, lg in c.relays if c.fe["b"] in lg)
    t0 = time.monotonic()
    os.kill(int(open(pidfile).read()), signal.SIGKILL)
    while (st := c.status(job))["state"] != "failed":
        if time.monotonic() - t0 > 30:
            raise Failure(f"30 s after site b's relay died pcmd shows {st}")
        time.sleep(0.05)
    seen = time.monotonic() - t0
    if not any(b1 in x for x in st.get("lost", [])):
        raise Failure(f"pcmd lost the job's process elsewhere than {b1}: {st}")
    log(f"site b's relay killed: pcmd saw the process on {b1} lost after {seen:.2f} s: "
        f"{st['last_event']}")
    # pcmctl run ends the run (the job's MPI itself was intact: only pcmd's view of b1 went) and
    # relaunches it on a1,a2; the job runs on at full speed once pcmctl run has seen it iterate.
    t1 = time.monotonic()
    while "iterating again" not in c.pcmctl("events", job).stdout:
        if time.monotonic() - t1 > 60:
            raise Failure(f"pcmctl run did not relaunch the job: {c.status(job)}")
        time.sleep(0.1)
    st = c.status(job)
    if st["state"] != "running" or b1 in st["hosts"]:
        raise Failure(f"after the relaunch pcmd shows {st}")
    unthrottle()
    rc = p.wait(timeout=120)
    total = time.monotonic() - t0
    text = open(out).read()
    st = c.status(job)
    if rc != 0 or st["state"] != "finished":
        raise Failure(f"pcmctl run exited {rc}, pcmd shows {st}:\n{text[-3000:]}")
    checksum(text, plain, "the job relaunched after the relay's loss")
    events = c.pcmctl("events", job).stdout
    recovery = [x.strip() for x in events.splitlines() if "recovery 1 of 1" in x]
    if len(recovery) != 2:
        raise Failure(f"the job's events do not show one recovery:\n{events}")
    for line in recovery:
        log(line)
    log(f"ok: relay lost under a job: lost after {seen:.2f} s, relaunched on site a, finished "
        f"{total:.1f} s after the kill, checksum as plain")


def scenario(c):
    a1, a2 = c.a
    b1, b2 = c.names
    c1 = c.site_hosts["c"][0]
    c.start_pcmd("--site", "a", "--closed-sites", "--site-link", f"a:b:{RANGE}", "--hosts",
                 f"{a1}:2@a,{a2}:2@a,{b1}:2@b,{b2}:2@b,{c1}:2@c")
    site_cluster.relay_site_b(c)
    env = local_configs(c)
    c.ctl_site = "a"
    r = c.pcmctl("site-env")
    if f"export MPIR_CVAR_CH3_PORT_RANGE={LOW}:{HIGH}\n" not in r.stdout or \
            f"export OMPI_MCA_btl_tcp_port_min_v4={LOW}\n" not in r.stdout:
        raise Failure(f"pcmctl site-env printed {r.stdout!r}")
    log(f"pcmctl site-env: {' '.join(r.stdout.split())}")
    plain = cluster.heat2d_plain(c.build, ARGS)
    spread(c, env, plain)
    relay_lost(c, env, plain)


def main():
    return site_cluster.main_with(scenario, "sites_spread", logs=("job.out", "lost.out"), mpich_only=True,
                           nsites=3, nhosts=2, opens=[f"a:b:{RANGE}"])


if __name__ == "__main__":
    sys.exit(main())
