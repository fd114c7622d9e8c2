#!/usr/bin/env bash
# Store PUT/GET MB/s of a 1 GiB object on emulated disks beside `dd` of the same bytes to the
# same filesystem, in one run: 3 repetitions each, median reported. Prints a Markdown section
# for docs/BENCHMARKS.md. Usage: scripts/bench-store.sh [WORKDIR] (default: a mktemp dir under
# $TMPDIR; it needs ~4 GiB free). Uses the release binary (built first).
#
# dd read: the page cache is dropped with /proc/sys/vm/drop_caches when writable (root);
# otherwise the read is from cache and the table says so. The store GET is measured the same way.
set -euo pipefail
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
cargo build --release -q -p spinwise-cli
BIN="$CARGO_TARGET_DIR/release/spinwise"
WORK=${1:-$(mktemp -d)}
mkdir -p "$WORK"
SIZE_MIB=1024
REPS=3
SRC="$WORK/source.bin"
head -c $((SIZE_MIB * 1024 * 1024)) /dev/urandom > "$SRC"
sync

drop_cache() {
  if [ -w /proc/sys/vm/drop_caches ]; then sync; echo 3 > /proc/sys/vm/drop_caches; echo dropped
  else echo cached; fi
}
seconds() { local start end; start=$(date +%s.%N); "$@" > /dev/null; end=$(date +%s.%N); echo "$end - $start" | bc -l; }
mbps() { echo "scale=0; $SIZE_MIB * 1.048576 / $1" | bc -l; }
median() { printf '%s\n' "$@" | sort -n | sed -n 2p; }

declare -a dd_w dd_r put get
for rep in $(seq $REPS); do
  rm -f "$WORK/dd.out"; cache=$(drop_cache)
  dd_w+=("$(seconds dd if="$SRC" of="$WORK/dd.out" bs=1M conv=fsync status=none)")
  cache=$(drop_cache)
  dd_r+=("$(seconds dd if="$WORK/dd.out" of=/dev/null bs=1M status=none)")
  rm -rf "$WORK/data"
  "$BIN" store --data "$WORK/data" init --preset dense-jbod-60 --time-factor 0.001 > /dev/null
  cache=$(drop_cache)
  put+=("$(seconds "$BIN" store --data "$WORK/data" put big "$SRC")")
  cache=$(drop_cache)
  get+=("$(seconds "$BIN" store --data "$WORK/data" get big /dev/null)")
done
rm -rf "$WORK/data" "$WORK/dd.out"

echo "Machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, $(uname -sr)"
echo "Filesystem: $(df -T "$WORK" | awk 'NR==2 {print $2 " (" $1 ")"}')"
echo "Load average at end: $(cut -d' ' -f1-3 /proc/loadavg); page cache for reads: $cache"
echo
echo "| operation (1 GiB, median of $REPS) | MB/s | seconds (all runs) | command |"
echo "|---|---|---|---|"
row() { local m; m=$(median "${@:3}"); echo "| $1 | $(mbps "$m") | ${*:3} | \`$2\` |"; }
row "dd write + fsync" "dd if=SRC of=OUT bs=1M conv=fsync" "${dd_w[@]}"
row "store PUT (staged, fsynced)" "spinwise store --data D put big SRC" "${put[@]}"
row "dd read" "dd if=OUT of=/dev/null bs=1M" "${dd_r[@]}"
row "store GET (staged)" "spinwise store --data D get big /dev/null" "${get[@]}"
