#!/usr/bin/env python3
"""sites.py BUILD — a job in a remote site, controlled through relays (issue 26).

testbed/sites.sh makes two sites of three namespace hosts each (a prefix of this test's own):
site a holds pcmd (on host a1, bound to a1's address, CURVE on); site b is remote: its hosts
reach only their site and their front-end. pcm-relay runs on both front-ends: b's listens inside
site b and forwards both of pcmd's ports (--mux) to a's over the wide-area bridge, on the one port
the front-ends' firewalls leave open between them (WAN_PORTS, where nftables is installed); a's
(--demux) forwards each connection to the pcmd port its header names. Site b's
configuration file is pcmd's with b's front-end in place of pcmd's address, nothing else. Then:

  - a host of site b (and b's front-end) cannot reach pcmd directly: the connection fails at
    once (no route), so the relay is really what carries everything;
  - pcmctl in site b sees pcmd's inventory through the relay, with each host's site;
  - host b3's agent (pcmd --agent) joins through the relay, into site b;
  - heat2d_pcm runs on b1,b2 (mpiexec inside b1, the job's ranks and pcmctl all with site b's
    file): a migration to site a's host is refused (--closed-sites, no --site-link
    between a and b); a
    migration to b3, a split and a merge commanded by pcmctl in site b; the final grid is the
    plain run's, bit for bit;
  - a process killed in site b is lost to pcmd (its watch connection's end crosses the relays);
  - the relays' logs show the request and watch connections they carried.

Exits 77 (ctest SKIPPED) with the reason where namespaces cannot be made (no root).
"""
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testbed"))
import cluster  # noqa: E402  (the cluster helpers: Failure, heat2d_plain, stretched, ...)
from cluster import Failure, log  # noqa: E402
from site_cluster import LAUNCHER, WAN_PORTS, main_with, relay_site_b  # noqa: E402


def connect_fails_fast(c, host, addr, port):
    """A TCP connection from host to addr:port must fail within 2 s (no route: at once)."""
    code = (f"import socket,time,sys\nt=time.monotonic()\ntry:\n"
            f" socket.create_connection(('{addr}',{port}),timeout=5)\n print('connected')\n"
            f"except OSError as e:\n print('failed', round(time.monotonic()-t,3), e)\n")
    r = subprocess.run(["bash", LAUNCHER, host, f"python3 -c \"{code}\""], capture_output=True,
                       text=True, timeout=30)
    out = r.stdout.strip()
    m = re.match(r"^failed ([\d.]+) (.*)$", out)
    if not m or float(m.group(1)) > 2:
        raise Failure(f"{host} -> {addr}:{port} should fail at once: {out} {r.stderr}")
    log(f"{host} cannot reach pcmd at {addr}:{port} directly: {m.group(2)} "
        f"({float(m.group(1)) * 1000:.1f} ms)")


def start_agent(c, h):
    """`pcmd --agent --agent-site b` on host h with site b's file; waits until h is in pcmd's
    inventory, in site b, with the agent's figures."""
    pidfile = os.path.join(c.tmp, f"agent-{h}.pid")
    logpath = os.path.join(c.tmp, f"agent-{h}.log")
    a = subprocess.Popen(["bash", LAUNCHER, h, os.path.join(c.build, "pcmd"), "--agent", "-c",
                          c.site_config, "--agent-site", "b", "--agent-period-ms", "500",
                          "--agent-own-namespace", "--pidfile", pidfile], env=c.site_env, stdout=open(logpath, "w"),
                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                         start_new_session=True)
    c.jobs.append(a)
    t0 = time.monotonic()
    while time.monotonic() - t0 < 30:
        row = cluster.host_table(c).get(h)
        if row and row.get("agent"):
            if row["site"] != "b":
                raise Failure(f"{h} joined through its agent outside site b: {row}")
            log(f"{h} joined through its agent (and both relays) after "
                f"{time.monotonic() - t0:.2f} s, site {row['site']}, {row['slots']} slots")
            return
        if a.poll() is not None:
            break
        time.sleep(0.1)
    raise Failure(f"{h}'s agent did not join: {open(logpath).read()}")


def scenario(c):
    a1 = c.a[0]
    b1, b2, b3 = c.names
    bfe = c.fe["b"]
    c.start_pcmd("--site", "a", "--closed-sites", "--hosts", f"{b1}:2@b,{b2}:2@b")
    port, watch, log_a, log_b = relay_site_b(c)
    for h in (b1, bfe):
        connect_fails_fast(c, h, c.addr[a1], port)

    rows = cluster.host_table(c)
    if [rows[h]["site"] for h in (b1, b2)] != ["b", "b"]:
        raise Failure(f"pcmctl host list (through the relays) shows {rows}")
    start_agent(c, b3)

    job = "site-heat"
    args = ["--nx", "61", "--ny", "40"]
    plain = cluster.heat2d_plain(c.build, [*args, "--iters", "2000"])
    out = os.path.join(c.tmp, "job.out")
    throttle, unthrottle = cluster.stretched(c)
    c.env = c.site_env  # the job's ranks read site b's file
    p = c.mpiexec([b1, b2], 2, [os.path.join(c.build, "examples/heat2d/heat2d_pcm"), *args,
                                "--iters", "2000", *throttle], out, env={"PCM_JOB": job})
    c.pcmctl("wait", job, "--iteration", "20", "--timeout", "120")
    # The broker's choice: site a's host joins the inventory; moving a process there would
    # spread the job over sites with no MPI port range open between them: refused, with why.
    c.pcmctl("host", "add", c.a[1], "--slots", "2", "--site", "a")
    r = c.pcmctl("migrate", job, "1", "--host", c.a[1], check=False)
    if r.returncode == 0 or "span sites b" not in r.stderr or "--site-link" not in r.stderr:
        raise Failure(f"a migration to site a was not refused with the reason: {r.stderr}")
    log(f"refused: {r.stderr.strip()}")
    steps = [(["migrate", job, "1", "--host", b3], [b1, b3]),
             (["split", job, "0", "--into", "2", "--host", b2], [b2, b2, b3]),
             (["merge", job, "1", "2"], [b2, b2])]
    for done, (cmd, want) in enumerate(steps, start=1):
        t0 = time.monotonic()
        c.pcmctl(*cmd)
        c.pcmctl("wait", job, "--reconfigurations", str(done), "--timeout", "180")
        cluster.expect_hosts(c, job, f"{' '.join(cmd)} ({time.monotonic() - t0:.1f} s)", want)
    unthrottle()
    text = cluster.wait_job(c, job, p, out, len(steps))
    m = re.search(r"^checksum (\w+)", text, re.M)
    if not m or m.group(1) != plain:
        raise Failure(f"checksum {m.group(1) if m else None} differs from the plain run's {plain}")
    # A process lost in site b is lost to pcmd too: its watch connection ends without "bye" and
    # the relays pass the end on.
    out2 = os.path.join(c.tmp, "lost.out")
    p2 = c.mpiexec([b2], 1, [os.path.join(c.build, "examples/heat2d/heat2d_pcm"), *args,
                             "--iters", "100000", "--throttle-us", "2000"], out2,
                   env={"PCM_JOB": "site-lost"}, spawn_hosts=[])
    c.pcmctl("wait", "site-lost", "--iteration", "5", "--timeout", "120")
    t0 = time.monotonic()
    if not cluster.kill_host(b2):
        raise Failure(f"nothing runs on {b2}")
    c.pcmctl("wait", "site-lost", "--ended", "--timeout", "60", check=False)
    st = c.status("site-lost")
    if st["state"] != "failed" or not any(b2 in x for x in st.get("lost", [])):
        raise Failure(f"after its process on {b2} was killed pcmd shows {st}")
    log(f"a process killed on {b2}: pcmd saw it lost through the relays after "
        f"{time.monotonic() - t0:.2f} s: {st['last_event']}")
    p2.wait(timeout=60)
    for name, path, ports in (("a", log_a, set(WAN_PORTS)), ("b", log_b, {port, watch})):
        text = open(path).read()
        seen = re.findall(r"-> port (\d+) \((?:mux|demux): port (\d+)\) ->", text)
        opened, named = {int(x) for x, _ in seen}, {int(y) for _, y in seen}
        if opened != ports or named != {port, watch}:
            raise Failure(f"relay {name} carried connections from ports {opened} naming "
                          f"{named}, expected {sorted(ports)} naming {[port, watch]}:\n"
                          f"{text[-2000:]}")
        log(f"relay {name}: {len(re.findall(r' opened: ', text))} connections opened, "
            f"{len(re.findall(r' closed ', text))} closed")
    log(f"ok: sites: a job in site b migrated, split and merged through the relays; checksum "
        f"{plain} as plain")


def main():
    return main_with(scenario, "sites")


if __name__ == "__main__":
    sys.exit(main())
