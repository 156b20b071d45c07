# reconfig_step.sh — sourced by the tests that drive a job through pcmctl: step N WHAT ARGS... runs
# `pcmctl ARGS...` and waits (120 s at most) until job $job has made N reconfigurations. Uses the
# caller's $pcmctl, $job, $out (the job's output, shown on failure), fail and show.
step() {
  local n=$1 what=$2
  shift 2
  "$pcmctl" "$@" || fail "pcmctl $* was refused: $(show "$out")"
  "$pcmctl" wait "$job" --reconfigurations "$n" --timeout 120 ||
    fail "the $what did not complete: $(show "$out")"
}
