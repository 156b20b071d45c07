#!/usr/bin/env python3
"""curve_traffic.py BUILD — what crosses the wire between PCM's processes and pcmd.

Two pcmds on loopback, one with --curve (as every bind beyond loopback is) and one without. Every
byte between a job (pcmctl and a two-process MPI job that stores and checkpoints) and each pcmd,
on the request port and on the watch port, goes through a small TCP relay here that records it.
With CURVE the secret and the job's name never appear in the recording; without CURVE the secret
does appear in the request port's bytes (so the search would find it), and on the watch port it
never does (a challenge and an HMAC proof, with or without CURVE). A client without the keys,
and one with a key pair pcmd does not know, get no answer. Every process started here is
stopped by its PID."""
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading

BUILD = sys.argv[1]
MPIEXEC = os.environ.get("MPIEXEC", "mpiexec")
PCMD = os.path.join(BUILD, "pcmd")
PCMCTL = os.path.join(BUILD, "pcmctl")
VECSUM = os.path.join(BUILD, "examples", "vecsum", "vecsum")


def fail(msg):
    print(f"curve_traffic: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


class Relay:
    """Accepts on 127.0.0.1 (a free port) and forwards each connection to target, recording
    every byte both ways."""

    def __init__(self, target_port):
        self.target = ("127.0.0.1", target_port)
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.recorded = bytearray()
        self.connections = 0
        self.lock = threading.Lock()
        self.stop_r, self.stop_w = os.pipe()
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self):
        sel = selectors.DefaultSelector()
        sel.register(self.listener, selectors.EVENT_READ, None)
        sel.register(self.stop_r, selectors.EVENT_READ, "stop")
        peer = {}
        while True:
            for key, _ in sel.select():
                if key.data == "stop":
                    for s in list(peer):
                        s.close()
                    return
                if key.data is None:
                    a, _ = self.listener.accept()
                    b = socket.create_connection(self.target)
                    peer[a], peer[b] = b, a
                    sel.register(a, selectors.EVENT_READ, "conn")
                    sel.register(b, selectors.EVENT_READ, "conn")
                    self.connections += 1
                    continue
                s = key.fileobj
                try:
                    data = s.recv(65536)
                except OSError:
                    data = b""
                if data:
                    with self.lock:
                        self.recorded += data
                    try:
                        peer[s].sendall(data)
                    except OSError:
                        data = b""
                if not data:
                    other = peer.pop(s, None)
                    peer.pop(other, None)
                    for x in (s, other):
                        if x is not None:
                            sel.unregister(x)
                            x.close()

    def close(self):
        os.write(self.stop_w, b"x")
        self.thread.join(5)
        self.listener.close()

    def bytes(self):
        with self.lock:
            return bytes(self.recorded)


def port_of(endpoint):
    return int(endpoint.rsplit(":", 1)[1])


def write_private(path, obj):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(obj, f)


class Pcmd:
    def __init__(self, tmp, name, *extra):
        self.dir = os.path.join(tmp, name)
        os.mkdir(self.dir, 0o700)
        self.config = os.path.join(self.dir, "pcmd.conf")
        pidfile = os.path.join(self.dir, "pcmd.pid")
        self.log = os.path.join(self.dir, "pcmd.log")
        with open(self.log, "w") as logf:
            r = subprocess.run([PCMD, "--detach", "--pidfile", pidfile, "--config", self.config,
                                "--data-dir", os.path.join(self.dir, "data"), "--probe-port",
                                "0", *extra], stdout=logf, stderr=logf, timeout=60)
        if r.returncode != 0:
            fail(f"pcmd {name} did not start: {open(self.log).read()}")
        self.pid = int(open(pidfile).read())
        self.conf = json.load(open(self.config))

    def stop(self):
        try:
            os.kill(self.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        for _ in range(200):
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                return
            threading.Event().wait(0.05)
        os.kill(self.pid, signal.SIGKILL)


def pcmctl(config, *args, timeout_ms=5000):
    return subprocess.run([PCMCTL, "--config", config, "--timeout", str(timeout_ms), *args],
                          capture_output=True, text=True, timeout=60)


def run_through_relays(tmp, pcmd, tag):
    """pcmctl and a job talk to pcmd only through relays; returns (request bytes, watch bytes,
    job name)."""
    req_relay = Relay(port_of(pcmd.conf["endpoint"]))
    watch_relay = Relay(port_of(pcmd.conf["watch"]))
    conf = dict(pcmd.conf, endpoint=f"tcp://127.0.0.1:{req_relay.port}",
                watch=f"tcp://127.0.0.1:{watch_relay.port}")
    client_config = os.path.join(pcmd.dir, "via-relay.conf")
    write_private(client_config, conf)
    r = pcmctl(client_config, "ping")
    if r.returncode != 0:
        fail(f"{tag}: pcmctl ping through the relay failed: {r.stderr}")
    job = f"traffic-{tag}-{os.getpid()}"
    env = dict(os.environ, PCM_CONFIG=client_config, PCM_JOB=job)
    out = os.path.join(pcmd.dir, "job.out")
    with open(out, "w") as f:
        p = subprocess.Popen([MPIEXEC, "-n", "2", VECSUM, "101", "60", "block", "0", "20"],
                             env=env, stdout=f, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            rc = p.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            rc = "timeout"
    if rc != 0:
        fail(f"{tag}: the job through the relay failed ({rc}): {open(out).read()}")
    r = pcmctl(client_config, "status", job)
    if r.returncode != 0 or job not in r.stdout:
        fail(f"{tag}: pcmctl status through the relay: {r.returncode} {r.stdout} {r.stderr}")
    req_relay.close()
    watch_relay.close()
    if req_relay.connections < 2 or watch_relay.connections < 2:
        fail(f"{tag}: the relays saw {req_relay.connections} request and "
             f"{watch_relay.connections} watch connections (expected the job's and pcmctl's)")
    return req_relay.bytes(), watch_relay.bytes(), job


def main():
    tmp = tempfile.mkdtemp(prefix="pcm-curve.")
    started = []
    try:
        plain = Pcmd(tmp, "plain")
        started.append(plain)
        curve = Pcmd(tmp, "curve", "--curve")
        started.append(curve)
        if "curve" in plain.conf:
            fail("a loopback pcmd without --curve wrote CURVE keys")
        if "curve" not in curve.conf:
            fail("pcmd --curve wrote no CURVE keys into its configuration")

        # Without CURVE the request port carries the secret in clear: the search finds it.
        req, watch, job = run_through_relays(tmp, plain, "plain")
        secret = plain.conf["secret"].encode()
        if secret not in req:
            fail("without CURVE the secret should be in the request bytes: the capture is not "
                 "working")
        if secret in watch:
            fail("the watch port carried the secret in clear")
        plain_bytes = len(req)
        print(f"curve_traffic: ok: without CURVE the secret is in the {len(req)} request bytes "
              f"(as expected), not in the {len(watch)} watch bytes")

        # With CURVE neither the secret nor anything readable of the requests crosses.
        req, watch, job = run_through_relays(tmp, curve, "curve")
        secret = curve.conf["secret"].encode()
        for what, data in (("request", req), ("watch", watch)):
            if secret in data:
                fail(f"with CURVE the secret is in the {what} bytes")
        for readable in (job.encode(), b"checkpoint", b"register", b"secret"):
            if readable in req:
                fail(f"with CURVE '{readable.decode()}' is readable in the request bytes")
        if len(req) < plain_bytes:
            fail(f"only {len(req)} request bytes recorded with CURVE, {plain_bytes} without: the "
                 "job did not talk through the relay")
        print(f"curve_traffic: ok: with CURVE neither the secret nor the job's name in the "
              f"{len(req)} request bytes; no secret in the {len(watch)} watch bytes")

        # A client without the keys, and one with a pair pcmd does not admit, get no answer.
        no_keys = {k: v for k, v in curve.conf.items() if k != "curve"}
        path = os.path.join(curve.dir, "no-keys.conf")
        write_private(path, no_keys)
        r = pcmctl(path, "status", timeout_ms=2000)
        if r.returncode == 0:
            fail("a client without CURVE keys was answered")
        print(f"curve_traffic: ok: without keys: exit {r.returncode}: {r.stderr.strip()}")
        server_secret = open(curve.config + ".key").read().strip()
        wrong = json.loads(json.dumps(curve.conf))
        wrong["curve"]["client_public"] = curve.conf["curve"]["server_public"]
        wrong["curve"]["client_secret"] = server_secret
        path = os.path.join(curve.dir, "wrong-keys.conf")
        write_private(path, wrong)
        r = pcmctl(path, "status", timeout_ms=2000)
        if r.returncode == 0:
            fail("a client with a key pair pcmd does not know was answered")
        print(f"curve_traffic: ok: unknown key pair: exit {r.returncode}: {r.stderr.strip()}")
        if "refused a CURVE client" not in open(curve.log).read():
            fail("pcmd did not log the refused key")
        r = pcmctl(curve.config, "ping")
        if r.returncode != 0:
            fail(f"pcmd stopped answering the right client: {r.stderr}")
        print("curve_traffic: ok: the right keys are still answered")
    finally:
        for p in started:
            p.stop()
        subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()
