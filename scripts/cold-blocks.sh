#!/usr/bin/env bash
# One cold run of a command with the block requests it caused: drops the page cache, runs an
# untimed priming command (e.g. `cat BIN` to read an executable back, or `true`), then times the
# command and prints the difference of /proc/diskstats for DEVICE around it: wall seconds, reads
# completed, MB read, MB per read. Used for docs/BENCHMARKS.md, "The extra requests were the
# store's opening".
#
# Usage: scripts/cold-blocks.sh LABEL PRIME_COMMAND COMMAND [ARGS...]
# Environment: DEVICE (default vda). Needs root (it writes /proc/sys/vm/drop_caches).
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 LABEL PRIME_COMMAND COMMAND [ARGS...]" >&2; exit 2; }
label=$1; prime=$2; shift 2
device=${DEVICE:-vda}
[ -w /proc/sys/vm/drop_caches ] || { echo "cold-blocks: run as root (it drops the page cache)" >&2; exit 1; }
grep -q " $device " /proc/diskstats || { echo "cold-blocks: no device $device in /proc/diskstats (set DEVICE)" >&2; exit 1; }
command -v bc > /dev/null || { echo "cold-blocks: bc is missing (apt-get install bc)" >&2; exit 1; }
# Fields of /proc/diskstats: 4 reads completed, 6 sectors read (512 B).
counters() { awk -v d="$device" '$3 == d { print $4, $6 }' /proc/diskstats; }
sync; echo 3 > /proc/sys/vm/drop_caches
bash -c "$prime" > /dev/null 2>&1
read -r reads_before sectors_before < <(counters)
start=$(date +%s.%N)
"$@" > /dev/null
end=$(date +%s.%N)
read -r reads_after sectors_after < <(counters)
reads=$((reads_after - reads_before))
mb=$(echo "($sectors_after - $sectors_before) * 512 / 1000000" | bc -l)
per_read=$(echo "if ($reads > 0) $mb / $reads else 0" | bc -l)
printf "%-40s wall %.3f s  reads %5d  MB %7.1f  MB/read %.2f\n" "$label" "$(echo "$end - $start" | bc -l)" "$reads" "$mb" "$per_read"
