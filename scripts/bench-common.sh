# Shared by scripts/bench-store.sh and scripts/bench-s3.sh (sourced, not run): builds the release
# binary, makes WORK and a SIZE_MIB random source file there, and defines the timing helpers.
# Expects `set -euo pipefail` and WORK_ARG (the script's first argument, or empty) from the caller.
# BIN: a spinwise binary to measure instead of building one (e.g. two builds compared in turn).
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
if [ -z "${BIN:-}" ]; then
  cargo build --release --locked -q -p spinwise-cli
  BIN="$CARGO_TARGET_DIR/release/spinwise"
fi
[ -x "$BIN" ] || { echo "bench: BIN=$BIN is not an executable" >&2; exit 1; }
command -v bc > /dev/null || { echo "bench: bc is missing (apt-get install bc)" >&2; exit 1; }
WORK=${WORK_ARG:-$(mktemp -d)}
mkdir -p "$WORK"
SIZE_MIB=${SIZE_MIB:-1024}
REPS=${REPS:-3}
SRC="$WORK/source.bin"
head -c $((SIZE_MIB * 1024 * 1024)) /dev/urandom > "$SRC"
sync

# Drops the page cache when we may (root), so every step reads from the disk; says which.
drop_cache() {
  if [ -w /proc/sys/vm/drop_caches ]; then sync; echo 3 > /proc/sys/vm/drop_caches; echo dropped
  else echo cached; fi
}
now() { date +%s.%N; }
# Wall seconds of a command (its output discarded), two decimals.
seconds() { local start; start=$(now); "$@" > /dev/null; echo "$(now) - $start" | bc -l | xargs printf '%.2f'; }
# MB/s (decimal) of SIZE_MIB moved in $1 seconds.
mbps() { echo "scale=0; $SIZE_MIB * 1.048576 / $1" | bc -l; }
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
