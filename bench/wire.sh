#!/usr/bin/env bash
# Benchmark of pcmd's request socket (bench/wire_flood), against one private pcmd on loopback:
#  - pcmd's resident memory (VmRSS now, VmHWM its peak, MB) idle; after BENCH_PEERS (4) peers
#    without the secret each send one message with a BENCH_OVERSIZE_MIB (1024) MiB frame at once;
#    after one message of BENCH_FRAMES (256) frames of 4 MiB, each within the frame cap;
#  - the bytes pcmd logs for BENCH_REFUSED (100000) requests with a wrong secret;
#  - the old data path: BENCH_REPS (5) stores and loads of BENCH_MIB (256) MiB through pcmd, the
#    requests PCM_Store and PCM_Load make (medians, the first pair left out as warm-up).
# PCM_BENCH_BUILD_DIR=DIR measures another build (an older one, for a before/after comparison).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
peers=${BENCH_PEERS:-4} oversize=${BENCH_OVERSIZE_MIB:-1024} nframes=${BENCH_FRAMES:-256}
refused=${BENCH_REFUSED:-100000} mib=${BENCH_MIB:-256} reps=${BENCH_REPS:-5}
flood=$B/bench/wire_flood
bench_start_pcmd
pid=$(cat "$tmp/pcmd.pid")
mem() { awk '/VmRSS/ {r = $2} /VmHWM/ {h = $2} END {printf "RSS %d MB, peak %d MB", r / 1024, h / 1024}' "/proc/$pid/status"; }
echo "== pcmd $B/pcmd (pid $pid)"
echo "idle: $(mem)"
for _ in $(seq "$peers"); do "$flood" oversize "$oversize" >"$tmp/over.$_" & done
wait
sort "$tmp"/over.* | uniq -c | sed 's/^ */  /'
echo "after $peers peers sent a $oversize MiB frame each without the secret: $(mem)"
"$flood" frames "$nframes" 4 | sed 's/^/  /'
echo "after one message of $nframes frames of 4 MiB without the secret: $(mem)"
kill -0 "$pid" || { echo "pcmd died"; exit 1; }
before=$(stat -c %s "$tmp/pcmd.log")
"$flood" refused "$refused" | sed 's/^/  /'
sleep 1.5  # the last second's "suppressed" line
after=$(stat -c %s "$tmp/pcmd.log")
echo "log: $((after - before)) bytes for $refused refused requests ($(wc -l <"$tmp/pcmd.log") lines in all)"
"$flood" storeload "$mib" "$reps" | tee "$tmp/sl.txt" | sed 's/^/  /'
bench_table wire "$tmp/sl.txt" "$mib"
echo "after the stores and loads: $(mem)"
