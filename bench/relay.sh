#!/usr/bin/env bash
# Benchmark: what pcm-relay costs (issue 26). On two test sites (testbed/sites.sh, prefix
# "pcmrb"), pcmd runs on host a1 with CURVE; relays on both front-ends carry site b's traffic.
#   latency     bench/pcmd_latency (ping, status, poll, register back to back, 5 s each) from
#               a2 straight to pcmd, and from b1 through the two relays (b's front-end, then a's);
#   throughput  BENCH_MB MiB (default 1024) over one TCP connection: raw from b's front-end to
#               a's (the wide-area bridge), raw from b1 to b's front-end (the site's bridge), and
#               from b1 through b's relay to a's front-end (both links and the relay's copy).
# bash bench/relay.sh [BUILD]   (BUILD: default $PCM_BUILD_DIR from scripts/.env).
# Needs root (namespaces): otherwise prints SKIPPED and exits 77. Removes what it made.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -n ${1:-} ]]; then
  B=$1
else
  # shellcheck source=/dev/null
  source "$ROOT/scripts/.env"
  B=$PCM_BUILD_DIR
fi
mb=${BENCH_MB:-1024}
prefix=pcmrb
sites=$ROOT/testbed/sites.sh
L=$ROOT/testbed/launcher_hosts.sh
for p in pcmd pcm-relay bench/pcmd_latency; do
  [[ -x $B/$p ]] || { echo "bench_relay: $B/$p is not built" >&2; exit 1; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pcm-bench-relay.XXXXXX")
chmod 755 "$tmp"
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  if [[ -f $tmp/pcmd.pid ]]; then kill "$(cat "$tmp/pcmd.pid")" 2>/dev/null || true; fi
  bash "$sites" down --prefix "$prefix" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP

set +e
# The wide-area link opens 4701 (the relays) and 45678 (the bulk transfers' sink) only.
bash "$sites" up --prefix "$prefix" --sites 2 --hosts 2 --wan-ports 4701,45678 >"$tmp/sites" 2>&1
rc=$?
set -e
if ((rc == 77)); then cat "$tmp/sites"; exit 77; fi
((rc == 0)) || { cat "$tmp/sites"; exit 1; }
addr() { awk -v h="$1" '$1 == h { sub(/\/.*/, "", $2); print $2 }' "$tmp/sites"; }
wan() { awk -v h="$1" '$1 == h { sub(/\/.*/, "", $7); print $7 }' "$tmp/sites"; }
a1=$(addr ${prefix}a1) afe_wan=$(wan ${prefix}afe) bfe=$(addr ${prefix}bfe)

bash "$L" ${prefix}a1 "$B/pcmd" --detach --pidfile "$tmp/pcmd.pid" --bind "$a1" --config \
  "$tmp/pcmd.conf" --data-dir "$tmp/data" --probe-port 0 >"$tmp/pcmd.log" 2>&1
read -r port watch < <(python3 -c "
import json; c = json.load(open('$tmp/pcmd.conf'))
print(c['endpoint'].rsplit(':', 1)[1], c['watch'].rsplit(':', 1)[1])")
relay() {  # relay FRONT-END LISTEN TO PORTS [OPTIONS...]
  bash "$L" "$1" "$B/pcm-relay" --listen "$2" --to "$3" --port "$4" "${@:5}" \
    --pidfile "$tmp/relay-$1.pid" >"$tmp/relay-$1.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do [[ -f $tmp/relay-$1.pid ]] && return 0; sleep 0.05; done
  echo "bench_relay: the relay on $1 did not start" >&2
  cat "$tmp/relay-$1.log" >&2
  exit 1
}
relay ${prefix}afe "$afe_wan" "$a1" "$port,$watch" --demux 4701 # sites.sh's one wide-area port
relay ${prefix}bfe "$bfe" "$afe_wan" "$port,$watch" --mux 4701
python3 -c "
import json, os; c = json.load(open('$tmp/pcmd.conf'))
c['endpoint'] = 'tcp://$bfe:$port'; c['watch'] = 'tcp://$bfe:$watch'
fd = os.open('$tmp/site-b.conf', os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
os.write(fd, json.dumps(c).encode())"

echo "== pcmd's answer times (ms), 5 s of back-to-back requests each"
echo "-- direct: a2 -> pcmd on a1 (same site)"
bash "$L" ${prefix}a2 "$B/bench/pcmd_latency" "$tmp/pcmd.conf" 5
echo "-- relayed: b1 -> relay on b's front-end -> relay on a's front-end -> pcmd on a1"
bash "$L" ${prefix}b1 "$B/bench/pcmd_latency" "$tmp/site-b.conf" 5

# One connection, $mb MiB: the sink acknowledges the end with one byte, the sender times from
# connect to that byte.
cat >"$tmp/sink.py" <<'EOF'
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(1); print("ready", flush=True)
c, _ = s.accept(); n = 0
while True:
    b = c.recv(1 << 20)
    if not b:
        break
    n += len(b)
c.sendall(b"k"); c.close(); print(n)
EOF
cat >"$tmp/send.py" <<'EOF'
import socket, sys, time
mb = int(sys.argv[3]); chunk = b"\x5a" * (1 << 20)
t = time.monotonic(); s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
for _ in range(mb):
    s.sendall(chunk)
s.shutdown(socket.SHUT_WR); assert s.recv(1) == b"k"
dt = time.monotonic() - t
print(f"{mb} MiB in {dt:.3f} s: {mb / dt:.0f} MiB/s")
EOF
transfer() {  # transfer LABEL SINK-HOST SINK-ADDR SENDER-HOST TARGET-ADDR
  local sinkport=45678
  bash "$L" "$2" "python3 $tmp/sink.py $3 $sinkport" >"$tmp/sink.out" 2>&1 &
  local sp=$!
  pids+=("$sp")
  for _ in $(seq 100); do grep -q ready "$tmp/sink.out" && break; sleep 0.05; done
  echo "-- $1: $(bash "$L" "$4" "python3 $tmp/send.py $5 ${6:-$sinkport} $mb")"
  wait "$sp" || true
}
echo "== one TCP connection, $mb MiB"
transfer "raw, wide-area link (b's front-end -> a's)" ${prefix}afe "$afe_wan" ${prefix}bfe "$afe_wan"
transfer "raw, site link (b1 -> b's front-end)" ${prefix}bfe "$bfe" ${prefix}b1 "$bfe"
# Through the relay: a third relay on b's front-end, to the sink on a's front-end.
bash "$L" ${prefix}bfe "$B/pcm-relay" --listen "$bfe" --to "$afe_wan" --port 45679:45678 \
  --pidfile "$tmp/relay-bulk.pid" >"$tmp/relay-bulk.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [[ -f $tmp/relay-bulk.pid ]] && break; sleep 0.05; done
transfer "relayed (b1 -> relay on b's front-end -> a's front-end)" ${prefix}afe "$afe_wan" \
  ${prefix}b1 "$bfe" 45679
grep -h "closed" "$tmp/relay-bulk.log" | sed 's/^/   relay: /' || true
