#!/usr/bin/env bash
# S3 PUT/GET MB/s of a 1 GiB object through `spinwise serve` beside the store's own PUT/GET of the
# same bytes, in one run: same binary, preset (dense-jbod-60), time factor and filesystem. REPS
# repetitions each (default 3), median reported, every run listed. Prints a Markdown section for
# docs/BENCHMARKS.md.
#
# Usage: scripts/bench-s3.sh [WORKDIR]   (default: a mktemp dir; needs ~6 GiB free)
# Environment: REPS (default 3), SIZE_MIB (default 1024), PORT (default 19000), CARGO_TARGET_DIR,
# BIN (a spinwise binary to measure; default: build one).
#
# The S3 client is curl with --aws-sigv4 (C, streaming, payload unsigned as clients do over TLS),
# so the client costs little next to the server. The server computes what S3 promises: the MD5
# ETag while the body streams in, SigV4 of the headers, the object's metadata row.
# Both data directories get bundle_bytes = 2 GiB so the server's upkeep does not start migrating
# the 1 GiB object during the GET that follows its PUT (it would at a full 1 GiB bundle); the
# migrated rows flush with the server stopped, as `spinwise store flush` does for the store rows.
# S3 rows time one request against a running server; store rows time a whole process (start,
# open, request, close), a few milliseconds more.
# Before each GET row the files it reads (the staging segment, or the stripe stacks) are read
# once, untimed, as scripts/bench-store.sh does: the first read of a just-written file is
# slower on a virtual disk (the host is still writing it back), which made one row pay it and
# not the other (S3 staged GETs of 0.58-1.54 s beside 0.42-0.48 s for the store's, 2026-11-24).
set -euo pipefail
command -v curl > /dev/null || { echo "bench-s3: curl is missing (apt-get install curl)" >&2; exit 1; }
WORK_ARG=${1:-}
# shellcheck source=scripts/bench-common.sh
source "$(dirname "$0")/bench-common.sh"
PORT=${PORT:-19000}
ACCESS=BENCHACCESSKEY0001
SECRET=bench-secret-key-0123456789
URL="http://127.0.0.1:$PORT"
# Reads a data directory's files that a GET of the only object reads (see the header).
prime() { find "$1/staging" "$1/disks" -type f \( -name 'seg-*.log' -o -name '*.stack' \) -exec cat {} + > /dev/null; }
s3() {
  curl -sS --fail-with-body --aws-sigv4 "aws:amz:us-east-1:s3" --user "$ACCESS:$SECRET" \
    -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$@"
}

init_store() {
  rm -rf "$1"
  "$BIN" store --data "$1" init --preset dense-jbod-60 --time-factor 0.001 > /dev/null
  sed -i 's/^bundle_bytes = .*/bundle_bytes = 2147483648/' "$1/store.toml"
  grep -q '^bundle_bytes = 2147483648$' "$1/store.toml" || { echo "bench-s3: no bundle_bytes in $1/store.toml" >&2; exit 1; }
}
serve_pid=
serve_start() {
  "$BIN" serve --data "$1" --listen "127.0.0.1:$PORT" --access-key "$ACCESS" --secret-key "$SECRET" \
    --etag "${2:-md5}" 2>> "$WORK/serve.log" &
  serve_pid=$!
  for _ in $(seq 100); do s3 -o /dev/null "$URL/" 2> /dev/null && return 0; sleep 0.1; done
  echo "bench-s3: the server did not answer; its log: $WORK/serve.log" >&2; exit 1
}
serve_stop() { kill -TERM "$serve_pid"; wait "$serve_pid"; serve_pid=; }
trap 'if [ -n "$serve_pid" ]; then kill "$serve_pid" 2> /dev/null || true; fi' EXIT

declare -a put get_staged flush get_migrated s3_put s3_get_staged s3_get_migrated s3_put_blake3
cache=cached
for rep in $(seq "$REPS"); do
  init_store "$WORK/store"
  cache=$(drop_cache); put+=("$(seconds "$BIN" store --data "$WORK/store" put big "$SRC")")
  prime "$WORK/store"
  cache=$(drop_cache); get_staged+=("$(seconds "$BIN" store --data "$WORK/store" get big /dev/null)")
  cache=$(drop_cache); flush+=("$(seconds "$BIN" store --data "$WORK/store" flush)")
  prime "$WORK/store"
  cache=$(drop_cache); get_migrated+=("$(seconds "$BIN" store --data "$WORK/store" get big /dev/null)")
  rm -rf "$WORK/store"

  init_store "$WORK/s3"
  serve_start "$WORK/s3"
  s3 -X PUT "$URL/bench" > /dev/null
  cache=$(drop_cache); s3_put+=("$(seconds s3 -T "$SRC" "$URL/bench/big")")
  prime "$WORK/s3"
  cache=$(drop_cache); s3_get_staged+=("$(seconds s3 -o /dev/null "$URL/bench/big")")
  serve_stop
  "$BIN" store --data "$WORK/s3" flush > /dev/null
  serve_start "$WORK/s3"
  prime "$WORK/s3"
  cache=$(drop_cache); s3_get_migrated+=("$(seconds s3 -o /dev/null "$URL/bench/big")")
  s3 -o "$WORK/back.bin" "$URL/bench/big"
  cmp -s "$SRC" "$WORK/back.bin" || { echo "bench-s3: the object read back through S3 differs" >&2; exit 1; }
  rm -f "$WORK/back.bin"
  serve_stop
  rm -rf "$WORK/s3"

  # The same PUT with `serve --etag blake3`: no MD5 pass (docs/s3.md "ETags").
  init_store "$WORK/s3"
  serve_start "$WORK/s3" blake3
  s3 -X PUT "$URL/bench" > /dev/null
  cache=$(drop_cache); s3_put_blake3+=("$(seconds s3 -T "$SRC" "$URL/bench/big")")
  serve_stop
  rm -rf "$WORK/s3"
done
rm -f "$SRC"

echo "Machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, $(uname -sr)"
echo "Filesystem: $(df -T "$WORK" | awk 'NR==2 {print $2 " (" $1 ")"}'); page cache before each step: $cache"
echo "Load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| operation ($SIZE_MIB MiB, median of $REPS) | store MB/s | S3 MB/s | S3 cost | store s (every run) | S3 s (every run) |"
echo "|---|---|---|---|---|---|"
row() {
  local name=$1 store_runs=$2 s3_runs=$3
  local m s; m=$(median $store_runs); s=$(median $s3_runs)
  local cost; cost=$(echo "scale=1; 100 * ($s - $m) / $m" | bc -l)
  echo "| $name | $(mbps "$m") | $(mbps "$s") | ${cost}% | $store_runs | $s3_runs |"
}
row "PUT (acknowledged: staged + fsynced)" "${put[*]}" "${s3_put[*]}"
row "PUT, \`serve --etag blake3\` (no MD5)" "${put[*]}" "${s3_put_blake3[*]}"
row "GET (staged)" "${get_staged[*]}" "${s3_get_staged[*]}"
row "GET (migrated: k data stacks)" "${get_migrated[*]}" "${s3_get_migrated[*]}"
echo
echo "store flush (not an S3 call; for scale): $(mbps "$(median "${flush[@]}")") MB/s, runs: ${flush[*]}"
