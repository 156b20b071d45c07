#!/usr/bin/env bash
# private_refusals.sh BUILD — pcmd refuses to start, saying how to fix it, on a configuration file
# open to others, a weak secret, and a configuration or data directory writable by others; what it
# creates itself is private (directories 0700, files 0600, with --curve its key file too). Each
# pcmd runs on loopback, and the one that starts is stopped by its PID.
set -uo pipefail
build=$1
pcmd=$build/pcmd
pcmctl=$build/pcmctl
dir=$(mktemp -d "${TMPDIR:-/tmp}/pcm-private.XXXXXX")
pid=
stop() { if [ -n "$pid" ]; then kill "$pid" 2>/dev/null; while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done; fi; pid=; }
trap 'stop; rm -rf "$dir"' EXIT
fail() { echo "private_refusals: FAIL: $*" >&2; exit 1; }
mode() { stat -c %a "$1"; }

# start CONFIG DATA [ARGS...]: pcmd --detach; its exit code, its messages in $dir/out.
start() {
  local config=$1 data=$2
  shift 2
  "$pcmd" --detach --pidfile "$dir/pcmd.pid" --config "$config" --data-dir "$data" --probe-port 0 \
    "$@" >"$dir/out" 2>&1
  local rc=$?
  if [ $rc -eq 0 ]; then pid=$(cat "$dir/pcmd.pid"); fi
  return $rc
}
# refused WHAT EXPECTED-TEXT CONFIG DATA: pcmd must refuse, and its message must hold the text.
refused() {
  local what=$1 text=$2
  shift 2
  if start "$@"; then stop; fail "$what: pcmd started"; fi
  grep -qF -- "$text" "$dir/out" || fail "$what: the message does not say '$text': $(cat "$dir/out")"
  echo "private_refusals: ok: $what refused: $(tail -1 "$dir/out" | cut -c1-160)..."
}

# What pcmd creates: a new configuration directory 0700, the file and the key 0600, data 0700.
umask 022
start "$dir/conf/pcmd.conf" "$dir/data" --curve || fail "pcmd did not start: $(cat "$dir/out")"
"$pcmctl" --config "$dir/conf/pcmd.conf" ping >/dev/null || fail "pcmctl ping over CURVE failed"
[ "$(mode "$dir/conf")" = 700 ] || fail "configuration directory is $(mode "$dir/conf")"
[ "$(mode "$dir/conf/pcmd.conf")" = 600 ] || fail "configuration file is $(mode "$dir/conf/pcmd.conf")"
[ "$(mode "$dir/conf/pcmd.conf.key")" = 600 ] || fail "key file is $(mode "$dir/conf/pcmd.conf.key")"
[ "$(mode "$dir/data")" = 700 ] || fail "data directory is $(mode "$dir/data")"
cp -p "$dir/conf/pcmd.conf" "$dir/keep.conf"
stop
echo "private_refusals: ok: created 0700 directories and 0600 files under umask 022"
# (A stopped pcmd may remove its configuration file: each case below starts from the copy.)
secret=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['secret'])" "$dir/keep.conf")
cp -p "$dir/keep.conf" "$dir/conf/pcmd.conf"

# A restart with --curve keeps its CURVE keys (jobs that read the file before still connect).
key() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['curve']['server_public'])" "$1"; }
start "$dir/conf/pcmd.conf" "$dir/data" --curve || fail "a restart with --curve failed: $(cat "$dir/out")"
[ "$(key "$dir/conf/pcmd.conf")" = "$(key "$dir/keep.conf")" ] || fail "the CURVE keys changed"
"$pcmctl" --config "$dir/conf/pcmd.conf" ping >/dev/null || fail "the kept keys do not connect"
stop
cp -p "$dir/keep.conf" "$dir/conf/pcmd.conf"
echo "private_refusals: ok: a restart keeps its CURVE keys"

chmod 644 "$dir/conf/pcmd.conf"
refused "a configuration file readable by others" "chmod 600 $dir/conf/pcmd.conf" \
  "$dir/conf/pcmd.conf" "$dir/data"
chmod 620 "$dir/conf/pcmd.conf"
refused "a configuration file writable by the group" "chmod 600" "$dir/conf/pcmd.conf" "$dir/data"
chmod 600 "$dir/conf/pcmd.conf"

# The same configuration, private again: a restart keeps its secret.
start "$dir/conf/pcmd.conf" "$dir/data" || fail "a restart on the private files failed: $(cat "$dir/out")"
got=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['secret'])" "$dir/conf/pcmd.conf")
[ "$got" = "$secret" ] || fail "the secret changed across a restart"
stop
cp -p "$dir/keep.conf" "$dir/conf/pcmd.conf"

chmod 777 "$dir/conf"
refused "a configuration directory writable by others" "chmod 700 $dir/conf" \
  "$dir/conf/pcmd.conf" "$dir/data"
chmod 700 "$dir/conf"

chmod 777 "$dir/data"
refused "a data directory writable by others" "chmod 700 $dir/data" "$dir/conf/pcmd.conf" "$dir/data"
chmod 700 "$dir/data"

for weak in x s3cret aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa \
  abababababababababababababababababababababab; do
  python3 - "$dir/conf/pcmd.conf" "$weak" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["secret"] = sys.argv[2]
open(sys.argv[1], "w").write(json.dumps(c))
PY
  refused "the weak secret '${weak:0:12}'" "remove $dir/conf/pcmd.conf" "$dir/conf/pcmd.conf" "$dir/data"
done

# Fixed as the messages say: it starts again, with the old secret where it was kept.
cp -p "$dir/keep.conf" "$dir/conf/pcmd.conf"
start "$dir/conf/pcmd.conf" "$dir/data" || fail "pcmd did not start once fixed: $(cat "$dir/out")"
"$pcmctl" --config "$dir/conf/pcmd.conf" ping >/dev/null || fail "pcmctl ping failed"
stop
echo "private_refusals: ok: every refusal said how to fix it; once fixed pcmd starts"
