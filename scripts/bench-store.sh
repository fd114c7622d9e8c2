#!/usr/bin/env bash
# Store PUT/GET MB/s of a 1 GiB object on emulated disks beside `dd` of the same bytes to the
# same filesystem, in one run: REPS repetitions each (default 3), median reported, every run
# listed. Prints a Markdown section for docs/BENCHMARKS.md.
#
# Usage: scripts/bench-store.sh [WORKDIR]   (default: a mktemp dir; needs ~5 GiB free)
# Environment: REPS (default 3), SIZE_MIB (default 1024), CARGO_TARGET_DIR (default target),
# BIN (a spinwise binary to measure; default: build one), TIME_FACTOR (the store's emulated
# latencies, default 0.001: a 20 s spin-up takes 20 ms; 0.000001 leaves the read path alone).
#
# Rows (each timed from process start to exit, page cache dropped before every step when
# /proc/sys/vm/drop_caches is writable, i.e. as root; otherwise the table says "cached"):
# - dd write + fsync, store PUT (acknowledged = staged and fsynced, as the store acks it);
# - store flush: erasure-codes the staged object onto the emulated disks (k + r stripe stacks,
#   each fsynced, catalog committed); MB/s counts object bytes, not the k + r expansion;
# - dd read, store GET while staged, store GET after the flush (reads k data stacks), each GET
#   also with --verify (whole-object BLAKE3 on top of the per-chunk crc32c).
# - The same bytes read by dd right before each GET: the staging segment the staged GET reads,
#   and the k data stack files the migrated GET reads (one dd per file, all at once, as the GET
#   reads them on one thread per core). On a virtual disk the host caches files unevenly, so a
#   dd of another file (dd.out) can read at a different speed from the store's own files; these
#   rows are the like-for-like peers, and each GET row gives its ratio to both.
# - The migrated GET once more with the spinwise binary read back into the page cache after the
#   drop (as a running server's is): a cold CLI GET also pages in ~28 MB of its own executable,
#   which dd (a few hundred KiB) does not; the difference between the two rows is that cost.
set -euo pipefail
WORK_ARG=${1:-}
# shellcheck source=scripts/bench-common.sh
source "$(dirname "$0")/bench-common.sh"

# The k data stack files of the only blob: columns 0..k-1 (k from the layout), on whichever disks.
data_stacks() {
  local k
  k=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['erasure']['k'])" "$1/layout.json")
  for column in $(seq 0 $((k - 1))); do
    find "$1/disks" -name "blob-*-c$(printf '%03d' "$column").stack"
  done
}
# Reads files once, untimed, before their peer and GET rows: the first read after a write is
# slower on a virtual disk (the host is still writing the bytes back; measured 0.9-1.3 s for the
# stacks right after the flush, 0.6-0.8 s for the GET that followed), and both rows should meet
# the host in the same state. The guest's page cache is still dropped before each timed row.
prime() { cat "$@" > /dev/null; }
dd_all() { local f; for f in "$@"; do dd if="$f" of=/dev/null bs=1M status=none & done; wait; }

declare -a dd_w dd_r dd_segment dd_stacks put get_staged get_staged_verify flush get_migrated get_migrated_verify get_migrated_primed get_migrated_primed_verify
TIME_FACTOR=${TIME_FACTOR:-0.001}
# The page cache dropped, then the binary read back (untimed): see the rows above.
drop_cache_keep_binary() { drop_cache > /dev/null; cat "$BIN" > /dev/null; }
cache=cached
for rep in $(seq "$REPS"); do
  rm -rf "$WORK/data" "$WORK/dd.out"
  "$BIN" store --data "$WORK/data" init --preset dense-jbod-60 --time-factor "$TIME_FACTOR" > /dev/null
  cache=$(drop_cache); dd_w+=("$(seconds dd if="$SRC" of="$WORK/dd.out" bs=1M conv=fsync status=none)")
  cache=$(drop_cache); put+=("$(seconds "$BIN" store --data "$WORK/data" put big "$SRC")")
  cache=$(drop_cache); dd_r+=("$(seconds dd if="$WORK/dd.out" of=/dev/null bs=1M status=none)")
  segment=$(ls -S "$WORK/data/staging"/seg-*.log | head -1)
  prime "$segment"
  cache=$(drop_cache); dd_segment+=("$(seconds dd if="$segment" of=/dev/null bs=1M status=none)")
  cache=$(drop_cache); get_staged+=("$(seconds "$BIN" store --data "$WORK/data" get big /dev/null)")
  cache=$(drop_cache); get_staged_verify+=("$(seconds "$BIN" store --data "$WORK/data" get --verify big /dev/null)")
  cache=$(drop_cache); flush+=("$(seconds "$BIN" store --data "$WORK/data" flush)")
  mapfile -t stacks < <(data_stacks "$WORK/data")
  prime "${stacks[@]}"
  cache=$(drop_cache); dd_stacks+=("$(seconds dd_all "${stacks[@]}")")
  cache=$(drop_cache); get_migrated+=("$(seconds "$BIN" store --data "$WORK/data" get big /dev/null)")
  cache=$(drop_cache); get_migrated_verify+=("$(seconds "$BIN" store --data "$WORK/data" get --verify big /dev/null)")
  drop_cache_keep_binary; get_migrated_primed+=("$(seconds "$BIN" store --data "$WORK/data" get big /dev/null)")
  drop_cache_keep_binary; get_migrated_primed_verify+=("$(seconds "$BIN" store --data "$WORK/data" get --verify big /dev/null)")
done
rm -rf "$WORK/data" "$WORK/dd.out" "$SRC"

echo "Machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, $(uname -sr)"
echo "Filesystem: $(df -T "$WORK" | awk 'NR==2 {print $2 " (" $1 ")"}'); page cache before each step: $cache"
echo "Load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "Store time factor (emulated latencies): $TIME_FACTOR"
echo
echo "| operation ($SIZE_MIB MiB, median of $REPS) | MB/s | vs dd | vs dd of the same file(s) | seconds (every run) | command |"
echo "|---|---|---|---|---|---|"
ratio() { echo "scale=0; 100 * $(median "${!1}") / $2" | bc -l; }
# row NAME COMMAND PEER_ARRAY SAME_FILE_PEER_ARRAY|- RUNS...
row() {
  local name=$1 command=$2 peer=$3 same=$4; shift 4
  local m; m=$(median "$@")
  local same_ratio=—
  if [ "$same" != - ]; then same_ratio="$(ratio "$same" "$m")%"; fi
  echo "| $name | $(mbps "$m") | $(ratio "$peer" "$m")% | $same_ratio | $* | \`$command\` |"
}
row "dd write + fsync" "dd if=SRC of=OUT bs=1M conv=fsync" "dd_w[@]" - "${dd_w[@]}"
row "store PUT (acknowledged: staged + fsynced)" "spinwise store --data D put big SRC" "dd_w[@]" - "${put[@]}"
row "store flush (erasure-coded onto the emulated disks)" "spinwise store --data D flush" "dd_w[@]" - "${flush[@]}"
row "dd read" "dd if=OUT of=/dev/null bs=1M" "dd_r[@]" - "${dd_r[@]}"
row "dd read of the staging segment" "dd if=D/staging/seg-N.log of=/dev/null bs=1M" "dd_r[@]" "dd_segment[@]" "${dd_segment[@]}"
row "store GET (staged)" "spinwise store --data D get big /dev/null" "dd_r[@]" "dd_segment[@]" "${get_staged[@]}"
row "store GET (staged) --verify (+ whole-object BLAKE3)" "spinwise store --data D get --verify big /dev/null" "dd_r[@]" "dd_segment[@]" "${get_staged_verify[@]}"
row "dd read of the k data stacks (k dd at once)" "dd if=D/disks/…/blob-…-cNNN.stack of=/dev/null bs=1M &, N < k" "dd_r[@]" "dd_stacks[@]" "${dd_stacks[@]}"
row "store GET (migrated: k data stacks)" "spinwise store --data D get big /dev/null" "dd_r[@]" "dd_stacks[@]" "${get_migrated[@]}"
row "store GET (migrated) --verify" "spinwise store --data D get --verify big /dev/null" "dd_r[@]" "dd_stacks[@]" "${get_migrated_verify[@]}"
row "store GET (migrated), its binary in the page cache" "cat BIN; spinwise store --data D get big /dev/null" "dd_r[@]" "dd_stacks[@]" "${get_migrated_primed[@]}"
row "store GET (migrated) --verify, its binary in the page cache" "cat BIN; spinwise store --data D get --verify big /dev/null" "dd_r[@]" "dd_stacks[@]" "${get_migrated_primed_verify[@]}"
