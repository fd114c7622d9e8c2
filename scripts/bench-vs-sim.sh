#!/usr/bin/env bash
# Pelican's cross-validation applied to the archival benchmark: `spinwise bench` on a store
# directory over dense-jbod-60 in real time (time factor 1: 15-30 s spin-ups), each batch
# migrated file by file into the group the simulator gives its key (--migrate-like-sim), then
# `spinwise sim` replays the run's reads (trace.csv without its writes) on the same rack, and the
# two mean read latencies are printed side by side, then every read of both (bench-vs-sim-join.py).
#
# Usage: scripts/bench-vs-sim.sh [WORK]    Environment: STEPS (1), READS (20), CONCURRENCY (4),
#   SEED (1), CARGO_TARGET_DIR (default target), BIN (a `spinwise` already built: no cargo
#   build, which takes minutes on a small shared machine). Writes WORK/out (the bench's
#   results), sim-requests.csv (the replay, read by read) and power-log.csv (the store's disks).
set -euo pipefail
if [[ -z "${BIN:-}" ]]; then
  export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
  cargo build --release --locked -q -p spinwise-cli
  BIN="$CARGO_TARGET_DIR/release/spinwise"
fi
WORK=${1:-$(mktemp -d)}
rm -rf "$WORK/store" "$WORK/out"
mkdir -p "$WORK"
"$BIN" store --data "$WORK/store" init --preset dense-jbod-60 > /dev/null
# The bench counts no spin-ups: its disks' power states are logged from outside while it runs,
# on the wall clock, with the time it started to put them on the run's clock (the join below).
date +%s.%N > "$WORK/bench-start-unix-s"
"$BIN" bench --store "$WORK/store" --quick --steps "${STEPS:-1}" --reads-per-step "${READS:-20}" \
  --concurrency "${CONCURRENCY:-4}" --seed "${SEED:-1}" --migrate-like-sim --out "$WORK/out" --json \
  > "$WORK/bench.json" &
bench_pid=$!
python3 "$(dirname "$0")/power-state-log.py" "$WORK/store" "$WORK/power-log.csv" "$bench_pid" &
wait "$bench_pid"
wait
grep -v ',write,' "$WORK/out/trace.csv" > "$WORK/reads.csv"
"$BIN" sim --preset dense-jbod-60 --trace "$WORK/reads.csv" --hours 24 --warmup-hours 0 \
  --network-gbps unbounded --seed "${SEED:-1}" --requests-out "$WORK/sim-requests.csv" --json \
  > "$WORK/sim.json"
python3 - "$WORK" <<'PY'
import json, sys
work = sys.argv[1]
bench = json.load(open(f"{work}/bench.json"))
sim = json.load(open(f"{work}/sim.json"))
reads = [row["read"] for row in bench["rows"]]
count = sum(r["requests"] for r in reads)
mean_s = sum(r["latency_mean_ms"] * r["requests"] for r in reads) / count / 1e3
print(f"reads: {count} (store) / {sim['completion_s']['count']} (simulator)")
print(f"mean read latency: store {mean_s:.2f} s, simulator completion {sim['completion_s']['mean']:.2f} s "
      f"(time to first byte {sim['ttfb_s']['mean']:.2f} s)")
print(f"store p99 {max(r['latency_p99_ms'] for r in reads) / 1e3:.2f} s, simulator completion p99 "
      f"{sim['completion_s']['p99']:.2f} s; simulator spin-ups {sim['spin_ups']}")
PY
# Read by read: which reads the two disagree on, and whether they waited for a spin-up.
python3 "$(dirname "$0")/bench-vs-sim-join.py" "$WORK"
