#!/usr/bin/env bash
# Benchmark of reshaping without spawn (issue 36), side by side in one run (set up like the README
# commands): heat2d_pcm with a grid of each of BENCH_SIZES MiB (64 256 1024; 8192 columns) on 2
# processes is split 2 -> 3, merged 3 -> 2 and has rank 1 migrated, three ways, BENCH_REPS (2)
# times each, alternating:
#   live     under `pcmctl run`, PCM_RESHAPE=spawn: the commands as usual (MPI_Comm_spawn);
#   restart  under `pcmctl run`, PCM_RESHAPE=restart: each a restart reshape; its phases from the
#            job's events: version (asked -> written), stop (the run's end), start (launch, MPI
#            init and registration, where pcmd verifies the version), read (registration -> the
#            first poll of the new run, after PCM_Resume has read its share);
#   by hand  under a plain mpiexec: `pcmctl checkpoint`, the events polled until it is written,
#            TERM to mpiexec's group, mpiexec with PCM_RESTART=1 on the new count: what a user does
#            to change the count without PCM's reshapes.
# Each operation is timed from the command to the job iterating again (`pcmctl wait --iteration`
# on the new run). Prints the medians and the ratio restart / live per size and operation.
# Environment: BENCH_SIZES, BENCH_REPS.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
sizes=${BENCH_SIZES:-64 256 1024} reps=${BENCH_REPS:-2}
bench_start_pcmd --hosts localhost:8
heat=$B/examples/heat2d/heat2d_pcm
ctl=$B/pcmctl
nx=8192
csv=$tmp/restart_reshape.csv
echo "size_mib,way,op,total_s,version_s,stop_s,start_s,read_s" >"$csv"

now() { date +%s.%N; }
grid() { echo --nx $nx --ny $(($1 * 1024 * 1024 / 8 / nx)) --iters 100000000; }
# phases JOB: "version,stop,start,read" seconds of the job's last restart reshape, from the times
# of its events (one status read): taken -> checkpoint written -> the run's end told -> relaunch
# -> registered -> iterating again.
phases() {
  "$ctl" status "$1" --json | python3 -c '
import json, sys
j = json.load(sys.stdin)["jobs"][0]
def at(text):
    return [tm for e, tm in zip(j["events"], j["event_times"]) if text in e][-1]
a, b, c, d, e, f = (at(t) for t in (": a restart reshape: checkpoint, stop", "by a restart reshape)",
                                    "ends for the restart reshape of command", "relaunching on",
                                    "done by a restart reshape", "done: iterating again"))
print(f"{b - a:.3f},{d - c:.3f},{e - d:.3f},{f - e:.3f}")'
}
# iterating JOB: until the job's current run has polled an iteration.
iterating() { "$ctl" wait "$1" --iteration 1 --timeout 600 >/dev/null; }
ops=("split JOB 0 --into 2" "merge JOB 1 2" "migrate JOB 1")
names=(split merge migrate)

supervised() {  # supervised WAY MIB K: the three operations under pcmctl run
  local way=$1 mib=$2 k=$3 job=rr-$1-$2-$k mode i t0 t1
  mode=spawn
  [ "$way" = restart ] && mode=restart
  # shellcheck disable=SC2046
  PCM_RESHAPE=$mode "$ctl" run -n 2 --job "$job" --max-restarts 0 -- "$heat" $(grid "$mib") \
    >"$tmp/$job.out" 2>&1 </dev/null &
  bench_mpi=$!
  "$ctl" wait "$job" --iteration 3 --timeout 600 >/dev/null
  for i in 0 1 2; do
    t0=$(now)
    # shellcheck disable=SC2086
    "$ctl" ${ops[$i]//JOB/$job} >/dev/null
    "$ctl" wait "$job" --reconfigurations $((i + 1)) --timeout 600 >/dev/null
    iterating "$job"
    t1=$(now)
    if [ "$way" = restart ]; then
      echo "$mib,restart,${names[$i]},$(python3 -c "print(f'{$t1 - $t0:.3f}')"),$(phases "$job")" \
        >>"$csv"
    else
      echo "$mib,live,${names[$i]},$(python3 -c "print(f'{$t1 - $t0:.3f}')"),,,," >>"$csv"
    fi
  done
  kill -TERM "$bench_mpi" 2>/dev/null || true
  wait "$bench_mpi" 2>/dev/null || true
  bench_mpi=
  rm -rf "$tmp/data/checkpoints/$job"
}

by_hand() {  # by_hand MIB K: the same counts by checkpoint, stop and restart under mpiexec
  local mib=$1 k=$2 job=rr-hand-$1-$2 np=2 i t0 t1 id
  local counts=(3 2 2)
  # shellcheck disable=SC2046
  PCM_JOB=$job setsid mpiexec -n $np "$heat" $(grid "$mib") >"$tmp/$job.out" 2>&1 </dev/null &
  bench_mpi=$!
  "$ctl" wait "$job" --iteration 3 --timeout 600 >/dev/null
  for i in 0 1 2; do
    t0=$(now)
    id=$("$ctl" checkpoint "$job" --why by-hand | sed -n 's/.*checkpoint \([0-9]*\) asked.*/\1/p')
    until "$ctl" events "$job" | grep -q "checkpoint $id written"; do sleep 0.02; done
    kill -TERM -- "-$bench_mpi" 2>/dev/null || true
    wait "$bench_mpi" 2>/dev/null || true
    until ! "$ctl" status "$job" --json | grep -q '"state": "running"'; do sleep 0.02; done
    # shellcheck disable=SC2046
    PCM_JOB=$job PCM_RESTART=1 setsid mpiexec -n "${counts[$i]}" "$heat" $(grid "$mib") \
      >>"$tmp/$job.out" 2>&1 </dev/null &
    bench_mpi=$!
    until "$ctl" status "$job" --json 2>/dev/null | grep -q '"state": "running"'; do sleep 0.02; done
    iterating "$job"
    t1=$(now)
    echo "$mib,by hand,${names[$i]},$(python3 -c "print(f'{$t1 - $t0:.3f}')"),,,," >>"$csv"
  done
  kill -TERM -- "-$bench_mpi" 2>/dev/null || true
  wait "$bench_mpi" 2>/dev/null || true
  bench_mpi=
  rm -rf "$tmp/data/checkpoints/$job"
}

echo "== split 2 -> 3, merge 3 -> 2, migrate: live, restart reshape, by hand; $reps times each"
for mib in $sizes; do
  for k in $(seq "$reps"); do
    for way in live restart hand; do
      if [ "$way" = hand ]; then by_hand "$mib" "$k"; else supervised "$way" "$mib" "$k"; fi
      echo "  $mib MiB, $way, $k of $reps: $(grep -c "^$mib,${way/hand/by hand}," "$csv") operations timed"
    done
  done
done
bench_keep_csv "$csv"
bench_table restart_reshape "$csv"
