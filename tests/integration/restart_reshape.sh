#!/usr/bin/env bash
# restart_reshape.sh BUILD restart|auto|auto_fail — run under with_pcmd.sh. Reconfiguration without
# MPI_Comm_spawn (issue 36, docs/user/restart-reshape.md).
# restart: heat2d_pcm runs under `pcmctl run`
# with PCM_RESHAPE=restart on 2 processes and is split 2 -> 3 (rank 0 into 2), merged 3 -> 2
# (ranks 1 and 2) and has rank 1 migrated, through pcmctl, as a user would. pcmd hands the job
# none of them; pcmctl run carries each out by a version, a stop and a relaunch at the command's
# size, whose first PCM_Adapt returns PCM_RESHAPED. The job ends with the plain run's checksum,
# reports 3 reconfigurations, and its events time every phase of each reshape. A job with
# PCM_RESHAPE=restart that no pcmctl run supervises has its commands refused, saying why.
# auto: heat2d_pcm under `pcmctl run` with PCM_RESHAPE=auto and versions every 50 iterations is
# split 2 -> 3, and the spawn hangs (PCM_TEST_SPAWN_COMMAND: a script that sleeps, as Open MPI's
# spawn now and then does); the watchdog (PCM_RECONFIG_TIMEOUT_S=5) ends the run, and pcmctl run
# carries the split out by a restart reshape from the newest version: the job ends on 3
# processes with the plain run's checksum, and its events say so.
# auto_fail: the same, but the spawn fails at once (PCM_TEST_SPAWN_COMMAND names no program; on
# an MPI that cannot spawn, PCM_TEST_SPAWN_FAILS=1 leaves the spawn to fail by itself): the job
# goes on in its old world, and pcmctl run carries the split out by a restart reshape (from the
# version it asks for), the job ends on 3 processes with the plain run's checksum.
set -uo pipefail
build=$1 mode=${2:-restart} layout=block
pcmctl=$build/pcmctl
heat=$build/examples/heat2d
mpiexec=${MPIEXEC:-mpiexec}
fail() { echo "restart_reshape: FAIL: $*" >&2; exit 1; }
show() { sed 's/^/  | /' "$1" | tail -60; }
args=(--nx 64 --ny 48 --iters 1500 --layout "$layout")

plain=$(timeout 300 "$mpiexec" -n 2 "$heat/heat2d_plain" "${args[@]}" | awk '/^checksum/ {print $2}')
[ -n "$plain" ] || fail "the plain run printed no checksum"

# ended_on_three: pcmctl run ($run) exits 0, its last run restarted on 3 processes from a version
# ($out), and the checksum ($got) is the plain run's.
ended_on_three() {
  wait "$run"
  local rc=$?
  trap - EXIT
  [ $rc -eq 0 ] || fail "pcmctl run exited with $rc: $(show "$out")"
  grep -Eq '^heat2d: restarted from iteration [0-9]+ \(2 -> 3 processes\)$' "$out" ||
    fail "the relaunch did not restart on 3 processes from a version: $(show "$out")"
  got=$(awk '/^checksum/ {print $2}' "$out" | tail -1)
  [ "$got" = "$plain" ] || fail "checksum '$got' differs from the plain run's $plain: $(show "$out")"
}

if [ "$mode" = auto_fail ]; then
  job=autofail-$$
  out=$PCM_TEST_DIR/autofail.out
  hook=(PCM_TEST_SPAWN_COMMAND="$PCM_TEST_DIR/no-such-program")
  [ "${PCM_TEST_SPAWN_FAILS:-0}" = 1 ] && hook=()
  env "${hook[@]}" PCM_RESHAPE=auto timeout 300 "$pcmctl" run -n 2 --job "$job" --max-restarts 0 \
    -- "$heat/heat2d_pcm" "${args[@]}" --throttle-us 2000 >"$out" 2>&1 </dev/null &
  run=$!
  trap 'kill "$run" 2>/dev/null' EXIT
  "$pcmctl" wait "$job" --iteration 20 --timeout 120 >/dev/null || fail "the job did not start: $(show "$out")"
  "$pcmctl" split "$job" 0 --into 2 || fail "the split was refused: $(show "$out")"
  "$pcmctl" wait "$job" --reconfigurations 1 --timeout 120 ||
    fail "the split was not carried out: $(show "$out")"
  ev=$("$pcmctl" events "$job")
  ended_on_three
  for want in "failed live (" "PCM_RESHAPE=auto: left to pcmctl run's restart reshape" \
    "split of rank 0 into 2 done by a restart reshape (2 processes then, 3 now)"; do
    grep -qF "$want" <<<"$ev" || fail "no event says '$want': $ev"
  done
  echo "$ev" | grep -E "failed live|restart reshape"
  echo "restart_reshape auto_fail: ok: the failed split was carried out by a restart, checksum $got"
  exit 0
fi

if [ "$mode" = auto ]; then
  stuck=$PCM_TEST_DIR/stuck
  printf '#!/bin/sh\necho $$ >>"%s.pids"\nexec sleep 120\n' "$stuck" >"$stuck"
  chmod +x "$stuck"
  job=auto-$$
  out=$PCM_TEST_DIR/auto.out
  touch "$PCM_TEST_DIR/slow"
  PCM_RESHAPE=auto PCM_RECONFIG_TIMEOUT_S=5 PCM_TEST_SPAWN_COMMAND=$stuck timeout 300 \
    "$pcmctl" run -n 2 --job "$job" --max-restarts 1 -- "$heat/heat2d_pcm" "${args[@]}" \
    --commit-every 50 --throttle-us 2000 --throttle-while "$PCM_TEST_DIR/slow" >"$out" 2>&1 \
    </dev/null &
  run=$!
  trap 'kill "$run" 2>/dev/null' EXIT
  "$pcmctl" wait "$job" --iteration 120 --timeout 120 >/dev/null || fail "the job did not start: $(show "$out")"
  "$pcmctl" split "$job" 0 --into 2 || fail "the split was refused: $(show "$out")"
  # The events while the new run is slow (its versions' events would push them out).
  end=$((SECONDS + 120))
  until "$pcmctl" events "$job" 2>/dev/null | grep -q "restart reshape of command [0-9]* done"; do
    [ $SECONDS -lt $end ] || fail "the split was not carried out: $(show "$out"); $("$pcmctl" events "$job")"
    sleep 0.2
  done
  ev=$("$pcmctl" events "$job")
  rm -f "$PCM_TEST_DIR/slow"
  ended_on_three
  grep -q "(stuck in MPI_Comm_spawn) did not finish within 5 s" "$out" ||
    fail "the spawn did not hang: $(show "$out")"
  n=$(awk '/^reconfigurations/ {print $2}' "$out" | tail -1)
  [ "$n" = 1 ] || fail "heat2d_pcm reports '$n' reconfigurations, expected 1: $(show "$out")"
  for want in "split of rank 0 into 2 hung; PCM_RESHAPE=auto" \
    "hung and ended the run (PCM_RESHAPE=auto): carried out by a restart reshape from the newest" \
    "split of rank 0 into 2 done by a restart reshape (2 processes then, 3 now)"; do
    grep -qF "$want" <<<"$ev" || fail "no event says '$want': $ev"
  done
  for pid in $(cat "$stuck.pids"); do kill -9 "$pid" 2>/dev/null; done
  echo "$ev" | grep -E "hung|restart reshape"
  echo "restart_reshape auto: ok: the hung split was carried out by a restart, checksum $got"
  exit 0
fi

# Unsupervised: the command is refused, and the job is not touched.
job=unsupervised-$$
PCM_JOB=$job PCM_RESHAPE=restart timeout 300 "$mpiexec" -n 2 "$heat/heat2d_pcm" \
  --nx 64 --ny 48 --iters 400 --throttle-us 2000 >"$PCM_TEST_DIR/u.out" 2>&1 </dev/null &
u=$!
"$pcmctl" wait "$job" --iteration 5 --timeout 120 >/dev/null || fail "the unsupervised job did not start"
if msg=$("$pcmctl" split "$job" 0 --into 2 2>&1); then
  fail "a split of an unsupervised restart-reshape job was taken: $msg"
fi
grep -q "reshapes by restart" <<<"$msg" || fail "the refusal does not say why: $msg"
wait $u || fail "the unsupervised job failed: $(show "$PCM_TEST_DIR/u.out")"
echo "restart_reshape: unsupervised job's split refused: $msg"

job=restart-reshape-$$
out=$PCM_TEST_DIR/run.out
touch "$PCM_TEST_DIR/slow"
PCM_RESHAPE=restart timeout 400 "$pcmctl" run -n 2 --job "$job" --max-restarts 0 -- \
  "$heat/heat2d_pcm" "${args[@]}" --throttle-us 2000 --throttle-while "$PCM_TEST_DIR/slow" \
  >"$out" 2>&1 </dev/null &
run=$!
trap 'kill "$run" 2>/dev/null' EXIT
step() {  # step N WHAT PCMCTL-ARGS...: the N-th reconfiguration
  local n=$1 what=$2
  shift 2
  "$pcmctl" "$@" || fail "pcmctl $* was refused: $(show "$out")"
  "$pcmctl" wait "$job" --reconfigurations "$n" --timeout 120 ||
    fail "the $what did not complete: $(show "$out")"
  "$pcmctl" wait "$job" --iteration 1 --timeout 120 >/dev/null ||
    fail "the job did not iterate after the $what: $(show "$out")"
}
"$pcmctl" wait "$job" --iteration 20 --timeout 120 >/dev/null || fail "the job did not start: $(show "$out")"
step 1 split split "$job" 0 --into 2
size=$("$pcmctl" status "$job" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs"][0]["size"])')
[ "$size" = 3 ] || fail "after the split the job has $size processes, not 3"
step 2 merge merge "$job" 1 2
step 3 migration migrate "$job" 1
rm -f "$PCM_TEST_DIR/slow"
wait "$run"
rc=$?
trap - EXIT
[ $rc -eq 0 ] || fail "pcmctl run exited with $rc: $(show "$out")"
got=$(awk '/^checksum/ {print $2}' "$out" | tail -1)
[ "$got" = "$plain" ] || fail "checksum '$got' differs from the plain run's $plain: $(show "$out")"
n=$(awk '/^reconfigurations/ {print $2}' "$out" | tail -1)
[ "$n" = 3 ] || fail "heat2d_pcm reports '$n' reconfigurations, expected 3: $(show "$out")"
ev=$("$pcmctl" events "$job")
for what in "split of rank 0 into 2" "merge of ranks 1,2" "migrate of rank 1"; do
  grep -q "$what.* done by a restart reshape" <<<"$ev" ||
    fail "no event says the $what was done by a restart reshape: $ev"
done
done_lines=$(echo "$ev" | grep -c "restart reshape of command [0-9]* done: iterating again")
[ "$done_lines" = 3 ] || fail "$done_lines events time a finished restart reshape, expected 3: $ev"
echo "$ev" | grep -E "restart reshape|done by"
echo "restart_reshape: ok ($layout): split, merge and migration by restart, checksum $got (the plain run's)"
