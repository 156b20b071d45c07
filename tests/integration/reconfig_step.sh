# reconfig_step.sh — sourced by the tests that drive a job through pcmctl. Uses the caller's
# $pcmctl, $job, $out (the job's output, shown on failure), fail and show.
#   start_job CMD...  runs CMD (an mpiexec line) as job $job in the background (300 s at most,
#                     output to $out, no stdin), sets $mpi to its PID, ends it on the caller's exit
#                     (trap; clear it with `trap - EXIT` once it has been waited for) and waits
#                     until it has made 20 iterations.
#   step N WHAT ARGS...  runs `pcmctl ARGS...` and waits (120 s at most) until the job has made N
#                     reconfigurations.
#   kill_job_at N CMD...  runs CMD as job $job in a session of its own (output to $tmp/run.out),
#                     waits until it has made N iterations, kills its process tree
#                     ($PCM_KILL_TREE) and waits until pcmd has seen the job end.
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
kill_job_at() {
  local n=$1 pid
  shift
  PCM_JOB=$job setsid "$@" >"$tmp/run.out" 2>&1 </dev/null &
  pid=$!
  "$pcmctl" wait "$job" --iteration "$n" --timeout 120 ||
    fail "the job did not reach iteration $n: $(show "$tmp/run.out")"
  "$PCM_KILL_TREE" "$pid"
  wait "$pid" 2>/dev/null
  "$pcmctl" wait "$job" --ended --timeout 30 || fail "pcmd did not notice that the job died"
}
