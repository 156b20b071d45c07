#!/usr/bin/env python3
"""vecsum_py.py — run under with_pcmd.sh: examples/vecsum/vecsum.py (the pcm Python package)
against the C++ vecsum, whose history of exact sums is the reference.

  vecsum_py.py BUILD PYTHON compare|reshape|restart

compare: vecsum.py, vecsum_plain.py and the C++ vecsum on 2 processes print the same history.
reshape: vecsum.py on 2 processes through a split (2->3), a merge (3->2) and a migration (pcmctl),
  ends verified, with 3 reconfigurations and the reference history.
venv: PCM installed (cmake --install BUILD) into a scratch prefix, a new virtual environment
  (with the system's site packages: NumPy, mpi4py), `pip install --no-build-isolation --no-index`
  of python/ into it against that prefix (offline), and vecsum.py run by the environment's python
  (no PYTHONPATH: the installed package) prints the C++ vecsum's history.
restart: vecsum.py checkpointing every 50 iterations is killed with SIGKILL (kill_tree.sh:
  every process at once), restarted with PCM_RESTART=1 on 3 processes, and ends verified with
  the reference history.
Needs PYTHONPATH to hold the pcm package and MPIEXEC the launcher (ctest sets both).
"""
import os
import re
import shutil
import subprocess
import sys

build, python, mode = sys.argv[1:4]
here = os.path.dirname(os.path.abspath(__file__))
examples = os.path.join(here, "..", "..", "examples", "vecsum")
mpiexec = os.environ.get("MPIEXEC", "mpiexec")
pcmctl = os.path.join(build, "pcmctl")
tmp = os.environ["PCM_TEST_DIR"]
job = f"vecsum-py-{mode}-{os.getpid()}"
N = "997"


def fail(msg, out=""):
    print(f"vecsum_py: FAIL ({mode}): {msg}")
    if out:
        print("  | " + out.rstrip().replace("\n", "\n  | "))
    sys.exit(1)


def ctl(*a):
    r = subprocess.run([pcmctl, *a], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        fail(f"pcmctl {' '.join(a)}: {r.stderr.strip()}", open(os.path.join(tmp, "job.out")).read())
    return r.stdout


def run(np_, cmd, env=None, timeout=300):
    r = subprocess.run([mpiexec, "-n", str(np_), *cmd], capture_output=True, text=True,
                       timeout=timeout, env=dict(os.environ, **(env or {})), stdin=subprocess.DEVNULL)
    return r.returncode, r.stdout + r.stderr


def history(text, what):
    m = re.search(r"^vecsum: history ([\d ]+)$", text, re.M)
    if not m:
        fail(f"{what} printed no history", text)
    return m.group(1)


def verified(text, reconfigs, size, what):
    if not re.search(rf"^vecsum: ok: {reconfigs} reconfigurations, {size} processes, 0 wrong$",
                     text, re.M):
        fail(f"{what} did not end with 'vecsum: ok: {reconfigs} reconfigurations, {size} "
             "processes, 0 wrong'", text)


def reference(iters):
    rc, out = run(2, [os.path.join(build, "examples/vecsum/vecsum"), N, str(iters), "cyclic", "0",
                      "0"])
    if rc != 0:
        fail(f"the C++ vecsum exited with {rc}", out)
    verified(out, 0, 2, "the C++ vecsum")
    return history(out, "the C++ vecsum")


def start(np_, iters, throttle, every):
    out = open(os.path.join(tmp, "job.out"), "w")
    cmd = [mpiexec, "-n", str(np_), python, os.path.join(examples, "vecsum.py"), N, str(iters),
           "cyclic", str(throttle), str(every)]
    return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            env=dict(os.environ, PCM_JOB=job), start_new_session=True)


def kill(proc):
    """Kills the job's launcher and every process below it at once (with_pcmd.sh's
    kill_tree.sh: hydra's ranks are not in mpiexec's process group)."""
    subprocess.run([os.environ["PCM_KILL_TREE"], str(proc.pid)], check=False)
    proc.wait()


def finish(proc, what):
    try:
        rc = proc.wait(timeout=300)
    except subprocess.TimeoutExpired:
        kill(proc)
        fail(f"{what} did not end within 300 s", open(os.path.join(tmp, "job.out")).read())
    text = open(os.path.join(tmp, "job.out")).read()
    if rc != 0:
        fail(f"{what} exited with {rc}", text)
    return text


def install_into_venv():
    """The installed package's python: cmake --install, venv, pip install (offline)."""
    prefix, venv = os.path.join(tmp, "prefix"), os.path.join(tmp, "venv")
    # A copy: setuptools builds in the source tree (build/, *.egg-info) and reuses what it finds.
    src = os.path.join(tmp, "python-src")
    shutil.copytree(os.path.join(here, "..", "..", "python"), src,
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    steps = [[os.environ.get("CMAKE", "cmake"), "--install", build, "--prefix", prefix],
             [python, "-m", "venv", "--system-site-packages", venv],
             [os.path.join(venv, "bin", "python"), "-m", "pip", "install", "--no-build-isolation",
              "--no-index", "--no-deps", "--disable-pip-version-check", "--quiet",
              src]]
    libdir = os.path.join(prefix, os.environ.get("PCM_LIBDIR", "lib"))
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(libdir, "pkgconfig"),
               MPICC=os.environ.get("MPICC", "mpicc"), PIP_NO_CACHE_DIR="1")
    env.pop("PYTHONPATH", None)
    for cmd in steps:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env,
                           stdin=subprocess.DEVNULL)
        if r.returncode != 0:
            fail(f"{' '.join(cmd[:4])} ... exited with {r.returncode}", r.stdout + r.stderr)
    vpython = os.path.join(venv, "bin", "python")
    r = subprocess.run([vpython, "-c", "import pcm; print(pcm.__file__)"], capture_output=True,
                       text=True, timeout=60, env=env)
    if r.returncode != 0 or not r.stdout.strip().startswith(venv):
        fail(f"the environment's pcm is not its own: {r.stdout.strip()}", r.stderr)
    os.environ.pop("PYTHONPATH", None)
    return vpython, r.stdout.strip()


if mode == "venv":
    python, where = install_into_venv()
    mode = "compare"
    print(f"vecsum_py: pcm installed with pip into a new virtual environment: {where}")
if mode == "compare":
    ref = reference(300)
    for prog in ("vecsum.py", "vecsum_plain.py"):
        rc, out = run(2, [python, os.path.join(examples, prog), N, "300", "cyclic", "0", "0"])
        if rc != 0:
            fail(f"{prog} exited with {rc}", out)
        verified(out, 0, 2, prog)
        if history(out, prog) != ref:
            fail(f"{prog}'s history differs from the C++ vecsum's {ref}", out)
    print(f"vecsum_py: ok: vecsum.py, vecsum_plain.py and vecsum print the history {ref}")
elif mode == "reshape":
    iters = 1500
    ref = reference(iters)
    proc = start(2, iters, 2000, 0)
    ctl("wait", job, "--iteration", "20", "--timeout", "120")
    steps = [("split", job, "0", "--into", "2"), ("merge", job, "0", "1"), ("migrate", job, "1")]
    for done, step in enumerate(steps, 1):
        ctl(*step)
        ctl("wait", job, "--reconfigurations", str(done), "--timeout", "180")
    text = finish(proc, "vecsum.py")
    verified(text, 3, 2, "vecsum.py")
    if history(text, "vecsum.py") != ref:
        fail(f"the history differs from the C++ vecsum's {ref}", text)
    print("vecsum_py: ok: split 2->3, merge 3->2, migrate: the C++ vecsum's history")
elif mode == "restart":
    iters = 1000
    ref = reference(iters)
    proc = start(2, iters, 3000, 50)
    ctl("wait", job, "--iteration", "300", "--timeout", "120")
    kill(proc)
    ctl("wait", job, "--ended", "--timeout", "30")
    if re.search(r"^vecsum: ok", open(os.path.join(tmp, "job.out")).read(), re.M):
        fail("the job finished before it was killed")
    rc, out = run(3, [python, os.path.join(examples, "vecsum.py"), N, str(iters), "cyclic", "0",
                      "0"], env={"PCM_RESTART": "1", "PCM_JOB": job})
    if rc != 0:
        fail(f"the restart on 3 processes exited with {rc}", out)
    m = re.search(r"^vecsum: restarted from iteration (\d+) on 3 processes$", out, re.M)
    if not m or int(m.group(1)) < 250:
        fail("the restart did not resume from iteration 250 or later", out)
    verified(out, r"\d+", 3, "the restart")
    if history(out, "the restart") != ref:
        fail(f"the restart's history differs from the C++ vecsum's {ref}", out)
    print(f"vecsum_py: ok: killed, restarted on 3 processes from iteration {m.group(1)}: the C++ "
          "vecsum's history")
else:
    fail(f"unknown mode {mode}")
