# reconfig_step.sh — sourced by the tests that drive a job through pcmctl. Uses the caller's
# $pcmctl, $job, $out (the job's output, shown on failure), fail and show.
#   start_job CMD...  runs CMD (an mpiexec line) as job $job in the background (300 s at most,
#                     output to $out, no stdin), sets $mpi to its PID, ends it on the caller's exit
#                     (trap; clear it with `trap - EXIT` once it has been waited for) and waits
#                     until it has made 20 iterations.
#   step N WHAT ARGS...  runs `pcmctl ARGS...` and waits (120 s at most) until the job has made N
#                     reconfigurations.
start_job() {
  PCM_JOB=$job timeout 300 "$@" >"$out" 2>&1 </dev/null &
  mpi=$!
  # On a failure the job must not outlive the test: timeout (its PID) passes the signal on.
  trap 'kill "$mpi" 2>/dev/null' EXIT
  "$pcmctl" wait "$job" --iteration 20 --timeout 120 || fail "the job did not get going: $(show "$out")"
}

step() {
  local n=$1 what=$2
  shift 2
  "$pcmctl" "$@" || fail "pcmctl $* was refused: $(show "$out")"
  "$pcmctl" wait "$job" --reconfigurations "$n" --timeout 120 ||
    fail "the $what did not complete: $(show "$out")"
}
