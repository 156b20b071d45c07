#!/usr/bin/env bash
# bench/run.sh NAME [ARG...] — runs the benchmark driver bench/NAME.sh or bench/NAME.py (set up
# as the README commands do; bench/lib.sh), e.g. `bash bench/run.sh runtime`, `bash bench/run.sh
# levels`, `bash bench/run.sh slurm --quick`. A Python driver gets the build directory as its
# first argument, then ARG... Without NAME: the list of drivers, each with its first line.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ $# -eq 0 ]; then
  echo "usage: bash bench/run.sh NAME [ARG...]; NAME one of:"
  for f in "$here"/*.sh "$here"/*.py; do
    n=$(basename "$f")
    case $n in  # the library, this entry, and the programs or job scripts drivers run
      lib.sh | run.sh | benchlib.py | tables.py | adapt_cost.py | slurm_job.sh | mpi_scale_fit.py | \
        mpi_scale_model.py) continue ;;
    esac
    printf '  %-16s %s\n' "${n%.*}" "$(sed -n '2s/^# *//; 2s/^"""//; 2p' "$f" | cut -c1-90)"
  done
  exit 2
fi
name=$1
shift
if [ -f "$here/$name.sh" ]; then
  exec bash "$here/$name.sh" "$@"
elif [ -f "$here/$name.py" ] && [ "$name" != benchlib ] && [ "$name" != tables ]; then
  # shellcheck source=lib.sh
  source "$here/lib.sh"
  python3 "$here/$name.py" "$B" "$@"
else
  echo "bench/run.sh: no benchmark driver bench/$name.sh or bench/$name.py" >&2
  exit 2
fi
