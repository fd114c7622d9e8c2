#!/usr/bin/env bash
# The archival benchmark (`spinwise bench`, docs/bench.md) against Spinwise's S3 server over
# dense-jbod-60 and against s3s-fs (the peer) in one run: the same plan, the same client and
# machine, the two servers taking turns (ROUNDS rounds, default 2: Spinwise, s3s-fs, Spinwise,
# s3s-fs, ...), each on a fresh data directory under WORK. Prints where each run's results went.
#
# Usage: scripts/bench-archival.sh [WORK]     (default: a mktemp dir; needs ~3x CAPACITY free)
# Environment: CAPACITY (default 2GiB), STEPS (5), READS (100), CONCURRENCY (4),
#   STORAGE_CLASS (STANDARD), ROUNDS (2), CARGO_TARGET_DIR (default target).
# Needs s3s-fs: cargo install s3s-fs --version 0.14.1 --features binary --locked
set -euo pipefail
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
command -v s3s-fs > /dev/null || {
  echo "bench-archival: s3s-fs is missing (cargo install s3s-fs --version 0.14.1 --features binary --locked)" >&2
  exit 1
}
cargo build --release --locked -q -p spinwise-cli
BIN="$CARGO_TARGET_DIR/release/spinwise"
WORK=${1:-$(mktemp -d)}
mkdir -p "$WORK"
CAPACITY=${CAPACITY:-2GiB}
STEPS=${STEPS:-5}
READS=${READS:-100}
CONCURRENCY=${CONCURRENCY:-4}
STORAGE_CLASS=${STORAGE_CLASS:-STANDARD}
ROUNDS=${ROUNDS:-2}
export AWS_ACCESS_KEY_ID=benchkey AWS_SECRET_ACCESS_KEY=bench-secret-0123456789
SPINWISE_PORT=9471
PEER_PORT=9472

wait_port() { for _ in $(seq 200); do (echo > "/dev/tcp/127.0.0.1/$1") 2> /dev/null && return 0; sleep 0.05; done; echo "port $1 never opened" >&2; exit 1; }

run_bench() { # name port out
  "$BIN" bench --endpoint "http://127.0.0.1:$2" --bucket archive --capacity "$CAPACITY" \
    --steps "$STEPS" --reads-per-step "$READS" --concurrency "$CONCURRENCY" \
    --storage-class "$STORAGE_CLASS" --out "$3" > "$3.txt"
  echo "$1: $3 (load $(cut -d' ' -f1-3 /proc/loadavg))"
  cat "$3.txt"
}

for round in $(seq "$ROUNDS"); do
  data="$WORK/spinwise-$round"
  rm -rf "$data"
  "$BIN" serve --data "$data" --listen "127.0.0.1:$SPINWISE_PORT" --preset dense-jbod-60 \
    --access-key "$AWS_ACCESS_KEY_ID" --secret-key "$AWS_SECRET_ACCESS_KEY" \
    > "$WORK/spinwise-$round.log" 2>&1 &
  server=$!
  wait_port "$SPINWISE_PORT"
  run_bench "spinwise (round $round)" "$SPINWISE_PORT" "$WORK/spinwise-$round-out"
  kill "$server"; wait "$server" 2> /dev/null || true

  root="$WORK/s3s-fs-$round"
  rm -rf "$root"; mkdir -p "$root"
  s3s-fs --host 127.0.0.1 --port "$PEER_PORT" --access-key "$AWS_ACCESS_KEY_ID" \
    --secret-key "$AWS_SECRET_ACCESS_KEY" "$root" > "$WORK/s3s-fs-$round.log" 2>&1 &
  server=$!
  wait_port "$PEER_PORT"
  run_bench "s3s-fs (round $round)" "$PEER_PORT" "$WORK/s3s-fs-$round-out"
  kill "$server"; wait "$server" 2> /dev/null || true
done
