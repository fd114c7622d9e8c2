#!/usr/bin/env bash
# Small-object S3 benchmark (issue 28): GET and PUT latency (p50, p99) of 0 B, 4 KiB, 64 KiB and
# 1 MiB objects from one client, and 4 KiB GET and PUT operations per second from 32 clients,
# through `spinwise serve` beside s3s-fs (the same S3 framework, s3s 0.14.1, over plain files) in
# the same run. Prints a Markdown section for docs/BENCHMARKS.md; every run's JSON lines stay in
# WORK/results.jsonl.
#
# Usage: scripts/bench-s3-small.sh [WORKDIR]   (default: a mktemp dir; needs ~1 GiB free)
# Environment:
#   REPS            rounds (default 3); each round runs every server once, the order rotating
#                   from round to round so no server always runs first; medians are reported
#                   and every run listed
#   SPINWISE_BIN    the spinwise binary to measure (default: build target/release/spinwise)
#   BEFORE_BIN      another spinwise binary run as a third server, "spinwise-before" (e.g. a
#                   build from before a fix, to show the fix in the same run)
#   S3S_FS          the s3s-fs binary (default: s3s-fs on PATH, else S3S_FS_ROOT/bin/s3s-fs,
#                   installed there with cargo when missing)
#   S3S_FS_ROOT     where to install s3s-fs (default /tmp/s3s-fs-install)
#   REQUESTS, LARGE_REQUESTS, WARMUP_REQUESTS, CLIENTS, RATE_SECONDS: the generator's
#                   --requests (500), --large-requests (50), --warmup-requests (20),
#                   --clients (32), --rate-seconds (10)
#   PORT (default 19100), CARGO_TARGET_DIR.
#
# The client is crates/spinwise-s3/examples/s3_small_objects.rs (aws-sdk-s3, one connection
# pool per client, every GET checked byte for byte), the same binary and arguments for every
# server. Client and server share the machine's cores; each line carries both sides' CPU
# seconds so a reader can tell which side was busy.
# Spinwise serves a fresh dense-jbod-60 store (time factor 0.001) with its defaults: objects
# stay staged (migration starts after migrate_after_s, an hour, or a full 1 GiB bundle, and a
# run writes far less), so this measures the staged path, every PUT fsynced before it is
# acknowledged. s3s-fs serves a fresh directory on the same filesystem; it does not fsync.
set -euo pipefail
WORK=${1:-$(mktemp -d)}
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
REPS=${REPS:-3}
PORT=${PORT:-19100}
ACCESS=BENCHACCESSKEY0001
SECRET=bench-secret-key-0123456789
S3S_FS_ROOT=${S3S_FS_ROOT:-/tmp/s3s-fs-install}
S3S_FS_VERSION=0.14.1
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
command -v python3 > /dev/null || { echo "bench-s3-small: python3 is missing (it writes the summary)" >&2; exit 1; }

if [ -n "${SPINWISE_BIN:-}" ]; then BIN=$SPINWISE_BIN
else
  cargo build --release --locked -q -p spinwise-cli
  BIN="$CARGO_TARGET_DIR/release/spinwise"
fi
cargo build --release --locked -q -p spinwise-s3 --example s3_small_objects
GENERATOR="$CARGO_TARGET_DIR/release/examples/s3_small_objects"

if [ -z "${S3S_FS:-}" ]; then
  if command -v s3s-fs > /dev/null; then S3S_FS=$(command -v s3s-fs)
  else S3S_FS="$S3S_FS_ROOT/bin/s3s-fs"; fi
fi
if [ ! -x "$S3S_FS" ]; then
  echo "bench-s3-small: installing s3s-fs $S3S_FS_VERSION into $S3S_FS_ROOT" >&2
  cargo install s3s-fs --version "$S3S_FS_VERSION" --features binary --locked --root "$S3S_FS_ROOT" -q || {
    echo "bench-s3-small: could not install s3s-fs; run: cargo install s3s-fs --version $S3S_FS_VERSION --features binary --locked --root $S3S_FS_ROOT (or set S3S_FS to a built s3s-fs)" >&2
    exit 1
  }
  S3S_FS="$S3S_FS_ROOT/bin/s3s-fs"
fi
# The peer must be the s3s release Spinwise is built on, or the comparison is of two frameworks.
"$S3S_FS" --version | grep -q " $S3S_FS_VERSION\$" || {
  echo "bench-s3-small: $S3S_FS is $("$S3S_FS" --version), not s3s-fs $S3S_FS_VERSION" >&2; exit 1
}

SERVERS=(spinwise s3s-fs)
if [ -n "${BEFORE_BIN:-}" ]; then
  [ -x "$BEFORE_BIN" ] || { echo "bench-s3-small: BEFORE_BIN $BEFORE_BIN is not executable" >&2; exit 1; }
  SERVERS=(spinwise-before spinwise s3s-fs)
fi

server_pid=
trap 'if [ -n "$server_pid" ]; then kill "$server_pid" 2> /dev/null || true; fi' EXIT
# Starts server $1 over the fresh directory $2 and waits until its port accepts connections.
server_start() {
  local name=$1 dir=$2
  rm -rf "$dir"
  case $name in
    spinwise | spinwise-before)
      local bin=$BIN
      [ "$name" = spinwise-before ] && bin=$BEFORE_BIN
      "$bin" store --data "$dir" init --preset dense-jbod-60 --time-factor 0.001 > /dev/null
      "$bin" serve --data "$dir" --listen "127.0.0.1:$PORT" --access-key "$ACCESS" --secret-key "$SECRET" \
        >> "$WORK/$name.log" 2>&1 &
      ;;
    s3s-fs)
      mkdir -p "$dir"
      "$S3S_FS" --host 127.0.0.1 --port "$PORT" --access-key "$ACCESS" --secret-key "$SECRET" "$dir" \
        >> "$WORK/$name.log" 2>&1 &
      ;;
  esac
  server_pid=$!
  for _ in $(seq 200); do
    if (exec 3<> "/dev/tcp/127.0.0.1/$PORT") 2> /dev/null; then return 0; fi
    sleep 0.1
  done
  echo "bench-s3-small: $name did not answer; its log: $WORK/$name.log" >&2; exit 1
}
server_stop() { kill -TERM "$server_pid"; wait "$server_pid" || true; server_pid=; }

LOAD_AT_START=$(cut -d' ' -f1-3 /proc/loadavg)
RESULTS="$WORK/results.jsonl"
: > "$RESULTS"
for round in $(seq "$REPS"); do
  count=${#SERVERS[@]}
  for position in $(seq 0 $((count - 1))); do
    name=${SERVERS[$(((position + round - 1) % count))]}
    dir="$WORK/data-$name"
    server_start "$name" "$dir"
    echo "bench-s3-small: round $round, $name" >&2
    AWS_ACCESS_KEY_ID=$ACCESS AWS_SECRET_ACCESS_KEY=$SECRET "$GENERATOR" \
      --endpoint "http://127.0.0.1:$PORT" --bucket bench --label "$name" --server-pid "$server_pid" \
      --requests "${REQUESTS:-500}" --large-requests "${LARGE_REQUESTS:-50}" \
      --warmup-requests "${WARMUP_REQUESTS:-20}" --clients "${CLIENTS:-32}" \
      --rate-seconds "${RATE_SECONDS:-10}" |
      sed "s/^{/{\"round\":$round,/" >> "$RESULTS"
    server_stop
    if [ "$name" != s3s-fs ]; then
      # Staged, as the header says: a run that migrated objects measured another path.
      "$BIN" store --data "$dir" status |
        awk '/^objects:/ {all = $2} /^staged_objects:/ {staged = $2} END {exit !(all > 0 && all == staged)}' ||
        { echo "bench-s3-small: $name migrated objects during the run (store status in $dir)" >&2; exit 1; }
    fi
    rm -rf "$dir"
  done
done

echo "Machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, $(uname -sr)"
echo "Filesystem: $(df -T "$WORK" | awk 'NR==2 {print $2 " (" $1 ")"}')"
echo "Date: $(date -u '+%Y-%m-%d %H:%M UTC'); s3s-fs $("$S3S_FS" --version | awk '{print $2}') ($S3S_FS)"
if [ -n "${SPINWISE_BIN:-}" ]; then echo "spinwise: $BIN (given)"
else echo "spinwise: $BIN built at $(git rev-parse --short HEAD 2> /dev/null || echo unknown)$(git diff --quiet HEAD -- crates 2> /dev/null || echo ' plus uncommitted changes')"; fi
[ -z "${BEFORE_BIN:-}" ] || echo "spinwise-before: $BEFORE_BIN"
echo "Load average at start: $LOAD_AT_START; at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
python3 - "$RESULTS" "${SERVERS[@]}" << 'EOF'
# Summarises results.jsonl: medians over rounds, every run listed, and issue 28's targets.
import json, statistics, sys
path, servers = sys.argv[1], sys.argv[2:]
lines = [json.loads(line) for line in open(path)]
def runs(server, measurement, operation, size, field):
    return [line[field] for line in sorted(lines, key=lambda line: line["round"])
            if line["server"] == server and line["measurement"] == measurement
            and line["operation"] == operation and line["size_bytes"] == size]
def size_name(size):
    return f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB" if size else "0 B"
def every(values, digits):
    return " ".join(f"{value:.{digits}f}" for value in values)
rounds = max(line["round"] for line in lines)
print(f"Latency from one client, ms (median of {rounds} rounds; every round's p50 in brackets):")
print()
print("| operation | size | " + " | ".join(f"{s} p50 | {s} p99" for s in servers) + " |")
print("|---|---|" + "---|---|" * len(servers))
for operation in ["GET", "PUT"]:
    for size in [0, 4 << 10, 64 << 10, 1 << 20]:
        cells = []
        for server in servers:
            p50 = runs(server, "latency", operation, size, "p50_ms")
            p99 = runs(server, "latency", operation, size, "p99_ms")
            cells.append(f"{statistics.median(p50):.2f} [{every(p50, 2)}] | {statistics.median(p99):.2f}")
        print(f"| {operation} | {size_name(size)} | " + " | ".join(cells) + " |")
print()
clients = next(line["clients"] for line in lines if line["measurement"] == "rate")
print(f"4 KiB operations per second, {clients} clients (median of {rounds} rounds; every round in brackets; "
      "CPU ms per operation, server + client):")
print()
print("| operation | " + " | ".join(f"{s} ops/s | {s} CPU ms/op" for s in servers) + " |")
print("|---|" + "---|---|" * len(servers))
for operation in ["GET", "PUT"]:
    cells = []
    for server in servers:
        rates = runs(server, "rate", operation, 4 << 10, "ops_per_s")
        operations = runs(server, "rate", operation, 4 << 10, "operations")
        server_cpu = runs(server, "rate", operation, 4 << 10, "server_cpu_s")
        client_cpu = runs(server, "rate", operation, 4 << 10, "client_cpu_s")
        per_1k = [(1000 * s / n, 1000 * c / n) for s, c, n in zip(server_cpu, client_cpu, operations)]
        median_server = statistics.median(s for s, _ in per_1k)
        median_client = statistics.median(c for _, c in per_1k)
        cells.append(f"{statistics.median(rates):.0f} [{every(rates, 0)}] | {median_server:.2f} + {median_client:.2f}")
    print(f"| {operation} | " + " | ".join(cells) + " |")
print()
spinwise_p50 = statistics.median(runs("spinwise", "latency", "GET", 4 << 10, "p50_ms"))
spinwise_rate = statistics.median(runs("spinwise", "rate", "GET", 4 << 10, "ops_per_s"))
peer_rate = statistics.median(runs("s3s-fs", "rate", "GET", 4 << 10, "ops_per_s"))
verdict = lambda met: "**met**" if met else "**not met**"
print(f"- 4 KiB GET p50 under 3 ms: {spinwise_p50:.2f} ms, {verdict(spinwise_p50 < 3)}")
print(f"- 4 KiB GET ops/s with {clients} clients at least 80% of s3s-fs's: "
      f"{spinwise_rate:.0f} / {peer_rate:.0f} = {100 * spinwise_rate / peer_rate:.0f}%, "
      f"{verdict(spinwise_rate >= 0.8 * peer_rate)}")
EOF
