#!/usr/bin/env bash
# heat2d_restart.sh BUILD — run under with_pcmd.sh. heat2d_pcm commits a version every 100
# iterations and is killed with SIGKILL (kill_tree.sh: mpiexec, its proxy and every rank at once)
# mid-run; restarted with PCM_RESTART=1 on 1, 2 and 3 processes, it resumes from the newest version
# and ends with the plain run's checksum.
set -uo pipefail
MPIEXEC=${MPIEXEC:-mpiexec}
build=$1
pcmctl=$build/pcmctl
heat=$build/examples/heat2d
job=heat2d-restart-$$
fail() { echo "heat2d_restart: FAIL: $*" >&2; exit 1; }
show() { sed 's/^/  | /' "$1"; }
args=(--nx 97 --ny 64 --iters 1200)
pcm_args=("${args[@]}" --layout block-cyclic --block 3)

plain=$(timeout 300 "$MPIEXEC" -n 2 "$heat/heat2d_plain" "${args[@]}" | awk '/^checksum/ {print $2}')
[ -n "$plain" ] || fail "the plain run printed no checksum"

PCM_JOB=$job setsid "$MPIEXEC" -n 2 "$heat/heat2d_pcm" "${pcm_args[@]}" --commit-every 100 \
  --throttle-us 3000 >"$PCM_TEST_DIR/run.out" 2>&1 </dev/null &
mpi=$!
# pcmd learns the iteration from rank 0's polls, so the kill lands some way past 350 (measured up
# to 550 iterations later on Open MPI); 3 ms per iteration keeps it well before the end (1200).
# Iteration 350 comes after the commit of 300 returned (PCM_Commit waits for pcmd's answer); a
# kill just after a mark of 300 found version 300 not yet made.
"$pcmctl" wait "$job" --iteration 350 --timeout 120 ||
  fail "the job did not reach iteration 350: $(show "$PCM_TEST_DIR/run.out")"
"$PCM_KILL_TREE" "$mpi"
wait "$mpi" 2>/dev/null
"$pcmctl" wait "$job" --ended --timeout 30 || fail "pcmd did not notice that the job died"
grep -q '^checksum' "$PCM_TEST_DIR/run.out" && fail "the job finished before it was killed"
"$pcmctl" checkpoints "$job" || fail "cannot list the job's versions"

first=
for np in 1 2 3; do
  out=$PCM_TEST_DIR/r$np.out
  # The last restart commits again as it runs (and must not trip over the version it came from).
  more=()
  [ $np -eq 3 ] && more=(--commit-every 100)
  PCM_RESTART=1 PCM_JOB=$job timeout 300 "$MPIEXEC" -n $np "$heat/heat2d_pcm" "${pcm_args[@]}" \
    "${more[@]}" --throttle-us 0 >"$out" 2>&1 </dev/null || fail "restart on $np exited with $?:
$(show "$out")"
  k=$(sed -n 's/^heat2d: restarted from iteration \([0-9]*\) (2 -> '"$np"' processes)$/\1/p' "$out")
  [ -n "$k" ] || fail "restart on $np printed no 'restarted from iteration K (2 -> $np processes)':
$(show "$out")"
  [ "$k" -ge 300 ] || fail "restart on $np resumed from iteration $k, expected >= 300"
  [ -z "$first" ] || [ "$k" = "$first" ] ||
    fail "restart on $np resumed from iteration $k, the first one from $first"
  first=$k
  got=$(awk '/^checksum/ {print $2}' "$out")
  [ "$got" = "$plain" ] || fail "restart on $np: checksum '$got' differs from the plain run's $plain:
$(show "$out")"
  echo "heat2d_restart: restart on $np processes from iteration $k: checksum $got: ok"
done
"$pcmctl" checkpoints "$job" | grep -qE '(^|[^0-9])1100([^0-9]|$)' ||
  fail "the restart with --commit-every left no version of iteration 1100: $("$pcmctl" checkpoints "$job")"

# Damage: a bit of rank 1's grid in the newest version (1100) flips on disk. A restart reads its
# share from the shards, finds the bad chunk, has pcmd mark the version bad for good, and resumes
# from the version before it; ranks that do not read the files themselves
# (PCM_CHECKPOINT_DIRECT=0: everything through pcmd) get the same.
vdir=$PCM_TEST_DIR/data/checkpoints/$job/v00000000000000001100
[ -f "$vdir/manifest.json" ] || fail "no version directory $vdir"
python3 - "$vdir" <<'PY' || fail "cannot damage the version"
import json, sys
d = sys.argv[1]
m = json.load(open(d + "/manifest.json"))
ds = [x for x in m["shards"][1]["datasets"] if x["count"] > 1000][0]
with open(d + "/r1.h5", "r+b") as f:
    f.seek(ds["offset"] + 4097)
    b = f.read(1)
    f.seek(ds["offset"] + 4097)
    f.write(bytes([b[0] ^ 1]))
PY
# Version 1000 was written by the killed job (2 processes) or by the restart on 3, depending on
# where the kill landed; the restart must say which.
procs1000=$("$pcmctl" checkpoints "$job" | awk '$1 == 1000 {print $2}')
[ -n "$procs1000" ] || fail "no version 1000: $("$pcmctl" checkpoints "$job")"
for direct in 1 0; do
  out=$PCM_TEST_DIR/damaged$direct.out
  # The second run also commits, through pcmd, and so makes version 1100 anew.
  more=()
  [ $direct = 0 ] && more=(--commit-every 100)
  PCM_CHECKPOINT_DIRECT=$direct PCM_RESTART=1 PCM_JOB=$job timeout 300 "$MPIEXEC" -n 2 \
    "$heat/heat2d_pcm" "${pcm_args[@]}" "${more[@]}" --throttle-us 0 >"$out" 2>&1 </dev/null ||
    fail "restart after the damage (direct=$direct) exited with $?: $(show "$out")"
  k=$(sed -n 's/^heat2d: restarted from iteration \([0-9]*\) ('"$procs1000"' -> 2 processes)$/\1/p' "$out")
  [ "$k" = 1000 ] || fail "restart after the damage (direct=$direct) resumed from '$k', expected 1000:
$(show "$out")"
  got=$(awk '/^checksum/ {print $2}' "$out")
  [ "$got" = "$plain" ] || fail "restart after the damage: checksum '$got', plain $plain"
  if [ $direct = 1 ]; then
    "$pcmctl" checkpoints "$job" | grep -E '1100' | grep -q "marked bad" ||
      fail "version 1100 is not marked bad: $("$pcmctl" checkpoints "$job")"
  fi
done
grep -q "version 1100 is damaged" "$PCM_TEST_DIR/damaged1.out" ||
  fail "the first restart did not say that version 1100 is damaged: $(show "$PCM_TEST_DIR/damaged1.out")"
# The version made through pcmd (PCM_CHECKPOINT_DIRECT=0) replaced the bad one; it restarts.
out=$PCM_TEST_DIR/remade.out
PCM_RESTART=1 PCM_JOB=$job timeout 300 "$MPIEXEC" -n 3 "$heat/heat2d_pcm" "${pcm_args[@]}" \
  --throttle-us 0 >"$out" 2>&1 </dev/null || fail "restart from the remade version: $(show "$out")"
grep -q '^heat2d: restarted from iteration 1100 (2 -> 3 processes)$' "$out" ||
  fail "the restart did not resume from the remade version 1100: $(show "$out")"
[ "$(awk '/^checksum/ {print $2}' "$out")" = "$plain" ] || fail "restart from the remade version: checksum"
echo "heat2d_restart: a flipped bit in version 1100: marked bad, both restarts resumed from 1000 with checksum $plain; 1100 remade through pcmd restarts"
echo "heat2d_restart: ok: resumed from iteration $first on 1, 2 and 3 processes, checksum $plain"
