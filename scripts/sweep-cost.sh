#!/usr/bin/env bash
# User CPU seconds of each run of the `pelican-fig5` sweep, reproduced one at a time with
# `spinwise sim` on one core: which family of runs (policy, setting, network, rate) the sweep's
# CPU goes to. Used for docs/BENCHMARKS.md, "Where the sweep's CPU goes".
#
# The families are the sweep's (crates/spinwise-experiment/src/pelican.rs, `rate_sweep`):
# Pelican and FP as the paper describes them and with Spinwise's additions, the random layout
# (7 h), each at 40 Gbps and unbounded, at the 11 rates. Each run also plans the rack (~20 ms),
# which the sweep does once, so the total is a little above the sweep's user CPU.
#
# Usage: scripts/sweep-cost.sh   Environment: BIN (default target/release/spinwise), CORE
# (the core to pin to, default 1).
set -euo pipefail
BIN=${BIN:-target/release/spinwise}
CORE=${CORE:-1}
[ -x "$BIN" ] || { echo "sweep-cost: no $BIN; cargo build --release -p spinwise-cli, or set BIN" >&2; exit 1; }
command -v bc > /dev/null || { echo "sweep-cost: needs bc (apt-get install bc)" >&2; exit 1; }
rates="0.0625 0.125 0.25 0.5 1 2 3 4 5 6 8"
families=(
  "pelican-described|--no-stagger-switches --concurrent-requests 1 --hours 25"
  "pelican-additions|--hours 25"
  "fp-described|--policy fp --fp-queue-per-scheduler --hours 25"
  "fp-additions|--policy fp --hours 25"
  "random|--policy random --hours 7"
)
echo "| family | network | total user s | per rate (req/s: user s) |"
echo "|---|---|---|---|"
for family in "${families[@]}"; do
  name=${family%%|*}; read -r -a flags <<< "${family#*|}"
  for network in 40 unbounded; do
    total=0; runs=""
    for rate in $rates; do
      user=$( { /usr/bin/time -f "%U" taskset -c "$CORE" "$BIN" sim --preset pelican \
        --idle-spin-down-s never --json --rate "$rate" --network-gbps "$network" "${flags[@]}" \
        > /dev/null; } 2>&1 | tail -1)
      total=$(echo "$total + $user" | bc)
      runs="$runs $rate: $user;"
    done
    echo "| $name | $network | $total |${runs%;} |"
  done
done
