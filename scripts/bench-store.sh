#!/usr/bin/env bash
# Store PUT/GET MB/s of a 1 GiB object on emulated disks beside `dd` of the same bytes to the
# same filesystem, in one run: REPS repetitions each (default 3), median reported, every run
# listed. Prints a Markdown section for docs/BENCHMARKS.md.
#
# Usage: scripts/bench-store.sh [WORKDIR]   (default: a mktemp dir; needs ~5 GiB free)
# Environment: REPS (default 3), SIZE_MIB (default 1024), CARGO_TARGET_DIR (default target).
#
# Rows (each timed from process start to exit, page cache dropped before every step when
# /proc/sys/vm/drop_caches is writable, i.e. as root; otherwise the table says "cached"):
# - dd write + fsync, store PUT (acknowledged = staged and fsynced, as the store acks it);
# - store flush: erasure-codes the staged object onto the emulated disks (k + r stripe stacks,
#   each fsynced, catalog committed); MB/s counts object bytes, not the k + r expansion;
# - dd read, store GET while staged, store GET after the flush (reads k data stacks), each GET
#   also with --verify (whole-object BLAKE3 on top of the per-chunk crc32c).
set -euo pipefail
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
cargo build --release --locked -q -p spinwise-cli
BIN="$CARGO_TARGET_DIR/release/spinwise"
WORK=${1:-$(mktemp -d)}
mkdir -p "$WORK"
SIZE_MIB=${SIZE_MIB:-1024}
REPS=${REPS:-3}
SRC="$WORK/source.bin"
head -c $((SIZE_MIB * 1024 * 1024)) /dev/urandom > "$SRC"
sync

drop_cache() {
  if [ -w /proc/sys/vm/drop_caches ]; then sync; echo 3 > /proc/sys/vm/drop_caches; echo dropped
  else echo cached; fi
}
now() { date +%s.%N; }
seconds() { local start; start=$(now); "$@" > /dev/null; echo "$(now) - $start" | bc -l | xargs printf '%.2f'; }
mbps() { echo "scale=0; $SIZE_MIB * 1.048576 / $1" | bc -l; }
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

declare -a dd_w dd_r put get_staged get_staged_verify flush get_migrated get_migrated_verify
cache=cached
for rep in $(seq "$REPS"); do
  rm -rf "$WORK/data" "$WORK/dd.out"
  "$BIN" store --data "$WORK/data" init --preset dense-jbod-60 --time-factor 0.001 > /dev/null
  cache=$(drop_cache); dd_w+=("$(seconds dd if="$SRC" of="$WORK/dd.out" bs=1M conv=fsync status=none)")
  cache=$(drop_cache); put+=("$(seconds "$BIN" store --data "$WORK/data" put big "$SRC")")
  cache=$(drop_cache); dd_r+=("$(seconds dd if="$WORK/dd.out" of=/dev/null bs=1M status=none)")
  cache=$(drop_cache); get_staged+=("$(seconds "$BIN" store --data "$WORK/data" get big /dev/null)")
  cache=$(drop_cache); get_staged_verify+=("$(seconds "$BIN" store --data "$WORK/data" get --verify big /dev/null)")
  cache=$(drop_cache); flush+=("$(seconds "$BIN" store --data "$WORK/data" flush)")
  cache=$(drop_cache); get_migrated+=("$(seconds "$BIN" store --data "$WORK/data" get big /dev/null)")
  cache=$(drop_cache); get_migrated_verify+=("$(seconds "$BIN" store --data "$WORK/data" get --verify big /dev/null)")
done
rm -rf "$WORK/data" "$WORK/dd.out" "$SRC"

echo "Machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, $(uname -sr)"
echo "Filesystem: $(df -T "$WORK" | awk 'NR==2 {print $2 " (" $1 ")"}'); page cache before each step: $cache"
echo "Load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| operation ($SIZE_MIB MiB, median of $REPS) | MB/s | vs dd | seconds (every run) | command |"
echo "|---|---|---|---|---|"
row() {
  local name=$1 command=$2 peer=$3; shift 3
  local m p; m=$(median "$@"); p=$(median "${peer_runs[@]}")
  local ratio; ratio=$(echo "scale=0; 100 * $p / $m" | bc -l)
  echo "| $name | $(mbps "$m") | ${ratio}% | $* | \`$command\` |"
}
peer_runs=("${dd_w[@]}")
row "dd write + fsync" "dd if=SRC of=OUT bs=1M conv=fsync" dd "${dd_w[@]}"
row "store PUT (acknowledged: staged + fsynced)" "spinwise store --data D put big SRC" dd "${put[@]}"
row "store flush (erasure-coded onto the emulated disks)" "spinwise store --data D flush" dd "${flush[@]}"
peer_runs=("${dd_r[@]}")
row "dd read" "dd if=OUT of=/dev/null bs=1M" dd "${dd_r[@]}"
row "store GET (staged)" "spinwise store --data D get big /dev/null" dd "${get_staged[@]}"
row "store GET (staged) --verify (+ whole-object BLAKE3)" "spinwise store --data D get --verify big /dev/null" dd "${get_staged_verify[@]}"
row "store GET (migrated: k data stacks)" "spinwise store --data D get big /dev/null" dd "${get_migrated[@]}"
row "store GET (migrated) --verify" "spinwise store --data D get --verify big /dev/null" dd "${get_migrated_verify[@]}"
