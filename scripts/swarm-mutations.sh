#!/usr/bin/env bash
# Proof that the store swarm bites (issue 31): removes one fsync of the staging and migration
# path at a time, runs the swarm at its default scale, and prints a markdown table: site, caught,
# seed, step, message, seconds. Every host-file site is a `HostFiles::sync_file` /
# `sync_directory` call under a `// fsync-site: NAME` marker (crates/spinwise-store/src); the
# model disks' site is FaultyDisk's sync before acknowledging (`disk-sync`, and in --source mode
# its two calls apart: `disk-write`, `disk-remove` in spinwise-disk's file_table.rs).
#
#   scripts/swarm-mutations.sh [--source] [SITE...]   (no SITE: every site, then `none`)
#
# Two ways to remove a site:
# - default: one build of this tree; the swarm runs with SPINWISE_SWARM_REMOVE_FSYNC=SITE, and
#   the simulation's HostFiles neither performs nor records that site's calls, which is what
#   deleting the call does under simulation (the crash model learns of a sync only through the
#   call). The swarm fails if the site was never reached. Minutes for the whole table.
# - --source: deletes the marked statement with sed in a scratch worktree of HEAD (committed
#   code only; SWARM_MUTANTS_DIR to choose where) and rebuilds per site: the literal mutation,
#   about ten times slower on a shared two-core machine.
# Env: CARGO_TARGET_DIR (default: target); SPINWISE_SWARM_SEEDS / _STEPS (default 16 / 200).
set -euo pipefail
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$repo/target}
mode=env
if [ "${1:-}" = --source ]; then mode=source; shift; fi
test_name=swarm::the_store_keeps_every_acknowledged_object_and_every_budget_through_a_seeded_swarm_of_crashes

tree=$repo
if [ $mode = source ]; then
  tree=${SWARM_MUTANTS_DIR:-$(mktemp -d)/spinwise-mutants}
  git -C "$repo" worktree add --detach --force "$tree" HEAD > /dev/null 2>&1
  cleanup() { git -C "$repo" worktree remove --force "$tree" > /dev/null 2>&1 || true; }
  trap cleanup EXIT
fi

mapfile -t host_sites < <(grep -rhoE 'fsync-site: [a-z-]+' "$tree/crates/spinwise-store/src" \
  | sed 's/fsync-site: //' | sort -u)
if [ $mode = source ]; then disk_sites=(disk-write disk-remove); else disk_sites=(disk-sync); fi
if [ $# -gt 0 ]; then sites=("$@"); else sites=("${host_sites[@]}" "${disk_sites[@]}" none); fi

# --source: removes one site from the scratch tree (clean before each call).
mutate() {
  local site=$1 file
  case $site in
    none) ;;
    disk-write | disk-remove)
      local function=put; [ "$site" = disk-remove ] && function=remove
      sed -i "/pub(crate) fn $function(/,/^    }/ s/^\( *\)entry\.sync();/\1\/\/ mutant: no sync/" \
        "$tree/crates/spinwise-disk/src/file_table.rs" ;;
    *)
      file=$(grep -rl "fsync-site: $site\$" "$tree/crates/spinwise-store/src")
      # The marker and the statement under it, through the line that ends it.
      sed -i "/fsync-site: $site\$/,/;\$/d" "$file" ;;
  esac
  if [ "$site" != none ] && git -C "$tree" diff --quiet; then
    echo "swarm-mutations: site \`$site\` changed nothing" >&2; exit 2
  fi
}

echo "swarm-mutations: $mode mode, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, commit $(git -C "$repo" rev-parse --short HEAD)"
# The table's scale, not the test command's (10^5 steps, minutes a site).
export SPINWISE_SWARM_SEEDS="${SPINWISE_SWARM_SEEDS:-16}" SPINWISE_SWARM_STEPS="${SPINWISE_SWARM_STEPS:-200}"
printf '| site | caught | seed | step | message | seconds |\n|---|---|---|---|---|---|\n'
for site in "${sites[@]}"; do
  removal=
  if [ $mode = source ]; then git -C "$tree" checkout -q -- .; mutate "$site"
  elif [ "$site" != none ]; then removal=$site; fi
  log=$(mktemp)
  # Built first, so a compile error is told apart from a failing swarm.
  if ! (cd "$tree" && cargo test -q -p spinwise-store --test it --no-run) > "$log" 2>&1; then
    printf '| %s | build failed | | | see %s | |\n' "$site" "$log"; continue
  fi
  start=$(date +%s)
  if (cd "$tree" && SPINWISE_SWARM_REMOVE_FSYNC=$removal \
      cargo test -q -p spinwise-store --test it -- --exact "$test_name") > "$log" 2>&1; then
    printf '| %s | no | | | | %s |\n' "$site" $(( $(date +%s) - start ))
  else
    line=$(grep -m1 -oE 'seed [0-9]+ step [0-9]+ \(after [0-9]+ crashes\): .*' "$log" || true)
    seed=$(sed -E 's/^seed ([0-9]+).*/\1/' <<< "$line")
    step=$(sed -E 's/^seed [0-9]+ step ([0-9]+).*/\1/' <<< "$line")
    message=$(sed -E 's/^[^:]*: //' <<< "$line" | cut -c1-150 | tr '|' '/')
    caught=yes
    if grep -q 'was never reached' "$log"; then caught='not reached'; message='no call reached the site'
    elif [ -z "$line" ]; then message="failed without a seed line: see $log"; fi
    printf '| %s | %s | %s | %s | %s | %s |\n' "$site" "$caught" "$seed" "$step" "$message" \
      $(( $(date +%s) - start ))
  fi
done
