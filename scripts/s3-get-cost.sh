#!/usr/bin/env bash
# Server-side cost of one 1 GiB migrated S3 GET, per binary: CPU seconds (utime+stime of the
# server process, from /proc) and voluntary context switches of all its threads, measured
# around each GET (object's stacks in the page cache). Usage: scripts/s3-get-cost.sh BIN WORK [REPS]
# (BIN: a release `spinwise`; WORK: a scratch directory it deletes; needs ~2 GiB and curl).
set -euo pipefail
BIN=$1; WORK=$2; REPS=${3:-5}; PORT=19100
ACCESS=BENCHACCESSKEY0001; SECRET=bench-secret-key-0123456789; URL="http://127.0.0.1:$PORT"
s3() { curl -sS --fail-with-body --aws-sigv4 "aws:amz:us-east-1:s3" --user "$ACCESS:$SECRET" -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$@"; }
rm -rf "$WORK"; mkdir -p "$WORK"
head -c $((1024*1024*1024)) /dev/urandom > "$WORK/src"
"$BIN" store --data "$WORK/d" init --preset dense-jbod-60 --time-factor 0.001 > /dev/null
pid=
trap 'if [ -n "$pid" ]; then kill "$pid" 2> /dev/null || true; fi' EXIT
start() { "$BIN" serve --data "$WORK/d" --listen "127.0.0.1:$PORT" --access-key "$ACCESS" --secret-key "$SECRET" 2>>"$WORK/log" & pid=$!; for _ in $(seq 100); do s3 -o /dev/null "$URL/" 2>/dev/null && return 0; sleep 0.1; done; exit 1; }
start; s3 -X PUT "$URL/bench" >/dev/null; s3 -T "$WORK/src" "$URL/bench/big" >/dev/null; kill -TERM $pid; wait $pid || true
"$BIN" store --data "$WORK/d" flush >/dev/null
start
cpu() { awk '{print $14+$15}' /proc/$pid/stat; }
ctx() { cat /proc/$pid/task/*/status | awk '/^voluntary_ctxt_switches/ {s+=$2} END {print s}'; }
find "$WORK/d/disks" -name '*.stack' -exec cat {} + > /dev/null
for r in $(seq $REPS); do
  c0=$(cpu); x0=$(ctx); t0=$(date +%s.%N)
  s3 -o /dev/null "$URL/bench/big"
  t1=$(date +%s.%N); c1=$(cpu); x1=$(ctx)
  echo "get $r: wall $(echo "$t1 - $t0" | bc -l | xargs printf '%.2f') s, server cpu $(echo "($c1 - $c0)/100" | bc -l | xargs printf '%.2f') s, voluntary ctx switches $((x1 - x0))"
done
kill -TERM $pid; wait $pid || true; rm -rf "$WORK"
