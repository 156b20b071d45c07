"""setup.py — the extension pcm._pcm for pip (pyproject.toml holds the rest).

Finds PCM with pkg-config (`pkg-config --cflags --libs pcm`: set PKG_CONFIG_PATH to an installed
PCM's <prefix>/lib/pkgconfig), NumPy's and mpi4py's headers from the modules, and compiles and
links with the MPI compiler wrapper (MPICC, default mpicc), which must be the MPI mpi4py was built
with. The extension finds libpcm through an rpath to pkg-config's library directory.
"""
import os
import shlex
import shutil
import subprocess

import mpi4py
import numpy
from setuptools import Extension, setup


def pkg_config(*args):
    try:
        out = subprocess.run(["pkg-config", *args, "pcm"], check=True, capture_output=True,
                             text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit(f"pcm: pkg-config cannot find PCM ({e}); set PKG_CONFIG_PATH to the "
                         "lib/pkgconfig directory of an installed PCM (cmake --install)") from e
    return shlex.split(out)


mpicc = os.environ.get("MPICC", "mpicc")
if not shutil.which(mpicc):
    raise SystemExit(f"pcm: the MPI compiler wrapper {mpicc} is not found; set MPICC to the "
                     "wrapper of the MPI that mpi4py uses")
os.environ["CC"] = mpicc
os.environ["LDSHARED"] = f"{mpicc} -shared"

cflags = pkg_config("--cflags")
libdirs = [f[2:] for f in pkg_config("--libs-only-L")]
setup(ext_modules=[Extension(
    "pcm._pcm", ["pcmmodule.c", "pcm_dist.c", "pcm_halo.c",
                  "pcm_paper.c"],
    include_dirs=[f[2:] for f in cflags if f.startswith("-I")] + [numpy.get_include(),
                                                                  mpi4py.get_include()],
    library_dirs=libdirs, runtime_library_dirs=libdirs, libraries=["pcm"],
    extra_compile_args=["-std=c99"])])
