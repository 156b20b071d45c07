#!/usr/bin/env bash
# checkpoint_mtbf.sh BUILD — run under with_pcmd.sh. heat2d_pcm (no checkpoints of its own) with
# PCM_CHECKPOINT_MTBF=2: PCM_Adapt writes versions by itself, the first at once, then at Daly's
# interval for the measured cost, which pcmctl status reports (checked against the formula);
# no two versions closer than the interval; killed with SIGKILL mid-run, the job restarts from
# the newest version (on another process count) with the plain run's checksum.
set -uo pipefail
MPIEXEC=${MPIEXEC:-mpiexec}
build=$1
pcmctl=$build/pcmctl
heat=$build/examples/heat2d
job=mtbf-$$
fail() { echo "checkpoint_mtbf: FAIL: $*" >&2; exit 1; }
show() { sed 's/^/  | /' "$1"; }
args=(--nx 64 --ny 48 --iters 3000)
out=$PCM_TEST_DIR/run.out

plain=$(timeout 300 "$MPIEXEC" -n 2 "$heat/heat2d_plain" "${args[@]}" | awk '/^checksum/ {print $2}')
[ -n "$plain" ] || fail "the plain run printed no checksum"

PCM_CHECKPOINT_MTBF=2 PCM_LOG_LEVEL=info PCM_JOB=$job setsid "$MPIEXEC" -n 2 \
  "$heat/heat2d_pcm" "${args[@]}" --throttle-us 2000 >"$out" 2>&1 </dev/null &
mpi=$!
# Until the job has written 4 versions by itself (60 s at most).
for ((i = 0; i < 600; i++)); do
  [ "$(grep -c 'scheduled checkpoint (PCM_CHECKPOINT_MTBF=2): version of iteration' "$out")" -ge 4 ] && break
  kill -0 "$mpi" 2>/dev/null || fail "the job ended: $(show "$out")"
  sleep 0.1
done
"$pcmctl" status "$job" --json >"$PCM_TEST_DIR/status.json" || fail "pcmctl status"
"$PCM_KILL_TREE" "$mpi"
wait "$mpi" 2>/dev/null
"$pcmctl" wait "$job" --ended --timeout 30 >/dev/null || fail "pcmd did not notice that the job died"
grep -q '^checksum' "$out" && fail "the job finished before it was killed"
n=$(grep -c 'scheduled checkpoint (PCM_CHECKPOINT_MTBF=2): version of iteration' "$out")
[ "$n" -ge 4 ] || fail "$n versions written by the schedule in 60 s: $(show "$out")"
# The status's schedule is Daly's interval for its cost. Each version came no sooner than the
# interval in force when it was found due, which its own line gives ("due after I s"), the gap
# taken from the end of the last write to the start of this one, both from the log's times (to
# the millisecond, less 20 ms for the moments between the schedule's clock and a log line under
# load; the cost, and with it the interval, follows the load on the machine).
python3 - "$PCM_TEST_DIR/status.json" "$out" <<'PY' || fail "the schedule is wrong"
import json, math, re, sys
s = json.load(open(sys.argv[1]))["jobs"][0]["checkpoint_schedule"]
c, t, m = s["cost_s"], s["interval_s"], s["mtbf_s"]
daly = math.sqrt(2 * c * m) * (1 + math.sqrt(c / (2 * m)) / 3 + c / (2 * m) / 9) - c
assert m == 2 and c > 0 and abs(t - daly) < 1e-9, s
writes = []  # (start, end, interval that made it due or None for the first)
for line in open(sys.argv[2]):
    r = re.search(r"\[(\d+):(\d+):([\d.]+)\].*scheduled checkpoint .* (?:written|staged) in ([\d.]+) s"
                  r"(?: \(due after ([\d.]+) s\))?", line)
    if r:
        end = int(r[1]) * 3600 + int(r[2]) * 60 + float(r[3])
        writes.append((end - float(r[4]), end, float(r[5]) if r[5] else None))
assert len(writes) >= 2 and writes[0][2] is None and all(w[2] for w in writes[1:]), writes
gaps = [(b[0] - a[1], b[2]) for a, b in zip(writes, writes[1:])]
early = [(g, i) for g, i in gaps if g < i - 0.02]
assert not early, ("versions sooner than their interval (gap, interval):", early)
print(f"checkpoint_mtbf: cost {c:.4f} s, MTBF {m:.0f} s -> interval {t:.4f} s (Daly); "
      f"{len(writes)} versions, gaps {min(g for g, _ in gaps):.3f}-{max(g for g, _ in gaps):.3f} s, "
      f"intervals {min(i for _, i in gaps):.3f}-{max(i for _, i in gaps):.3f} s")
PY
"$pcmctl" status "$job" | grep -q "checkpoints every .* s of work (cost .* s, MTBF 2 s: Young/Daly)" ||
  fail "pcmctl status does not show the schedule: $("$pcmctl" status "$job")"
newest=$("$pcmctl" checkpoints "$job" --json | python3 -c 'import json,sys; print(max(v["iteration"] for v in json.load(sys.stdin) if v["valid"]))')

r=$PCM_TEST_DIR/restart.out
PCM_RESTART=1 PCM_JOB=$job timeout 300 "$MPIEXEC" -n 3 "$heat/heat2d_pcm" "${args[@]}" \
  >"$r" 2>&1 </dev/null || fail "the restart exited with $?: $(show "$r")"
k=$(sed -n 's/^heat2d: restarted from iteration \([0-9]*\) (2 -> 3 processes)$/\1/p' "$r")
[ -n "$k" ] && [ "$k" -ge "$newest" ] ||
  fail "the restart did not resume from the newest version $newest: $(show "$r")"
got=$(awk '/^checksum/ {print $2}' "$r")
[ "$got" = "$plain" ] || fail "restart: checksum '$got', the plain run's $plain"
echo "checkpoint_mtbf: ok: $n versions by the schedule; restart on 3 from $k: checksum $got"
