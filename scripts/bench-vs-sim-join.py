#!/usr/bin/env python3
# Joins the store's reads (WORK/out/requests.csv) with the simulator's replay of them
# (WORK/sim-requests.csv, `spinwise sim --requests-out`) read by read, and, when
# scripts/power-state-log.py logged the store's disks (WORK/power-log.csv), with the store's
# group spin-ups, so a difference in the tail can be traced to the read that waited and to what
# it waited behind (docs/bench.md, "Against the simulator").
#
# Usage: bench-vs-sim-join.py WORK    Prints the per-read table and the spin-up counts.
#
# How the reads are matched: trace.csv holds every request as issued, in issue order, with µs
# times; the replay drops the writes (reads.csv), and the simulator numbers client reads in
# submission order, which for a trace is the file's order, so the i-th read of reads.csv is the
# simulator's i-th id. The store's requests.csv row of that read has the same key and the same
# issue time (to the trace's µs).
import csv, json, os, sys

work = sys.argv[1]


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


store_reads = [r for r in rows(f"{work}/out/requests.csv") if r["operation"] == "read"]
trace_reads = [r for r in rows(f"{work}/reads.csv") if r["operation"] == "read"]
sim = sorted(rows(f"{work}/sim-requests.csv"), key=lambda r: int(r["id"]))
if not (len(store_reads) == len(trace_reads) == len(sim)):
    sys.exit(f"read counts differ: store {len(store_reads)}, trace {len(trace_reads)}, "
             f"simulator {len(sim)}")

joined = []
for i, (trace, replayed) in enumerate(zip(trace_reads, sim)):
    time_s = float(trace["time_s"])
    if abs(float(replayed["arrival_s"]) - time_s) > 1e-5 or int(replayed["bytes"]) != int(trace["size_bytes"]):
        sys.exit(f"read {i}: simulator id {replayed['id']} arrived at {replayed['arrival_s']} s "
                 f"with {replayed['bytes']} B, the trace has {time_s} s, {trace['size_bytes']} B")
    matches = [s for s in store_reads if s["key"] == trace["key"] and abs(float(s["time_s"]) - time_s) < 1e-5]
    if len(matches) != 1:
        sys.exit(f"read {i} ({trace['key']} at {time_s} s): {len(matches)} store rows match")
    store = matches[0]
    joined.append({
        "key": trace["key"],
        "group": int(replayed["target"]),
        "bytes": int(trace["size_bytes"]),
        "issue_s": float(store["time_s"]),
        "store_latency_s": float(store["latency_s"]),
        "sim_arrival_s": float(replayed["arrival_s"]),
        "sim_serve_s": float(replayed["serve_s"]),
        "sim_first_byte_s": float(replayed["first_byte_s"]),
        "sim_last_byte_s": float(replayed["last_byte_s"]),
    })

# The store's group spin-ups, from the power-state log: one starts when the group's disks are
# told to spin up (they all are at once) and is over once none of them is still spinning up. A
# disk can be active for less than the log's 0.2 s poll before the group spins down again (a
# read of a few KB), so "active" is not waited for. The store then mounts, which the power
# state does not show. Times are moved onto the run's clock with the wall time bench-vs-sim.sh
# took as the bench started; the run's clock starts once the store is open, a fraction of a
# second later, so these times are late by that much.
spin_ups = {}  # group -> [(spinning up from, until, spinning down from)], run seconds
up_at_first_read = []
log_path, start_path = f"{work}/power-log.csv", f"{work}/bench-start-unix-s"
if os.path.exists(log_path) and os.path.exists(start_path):
    start_s = float(open(start_path).read())
    layout = json.load(open(f"{work}/store/layout.json"))
    group_of_disk = {d: g for g, disks in enumerate(layout["groups"]) for d in disks}
    state = {}
    open_up = {}  # group -> [start, end or None, down or None]
    first_read_s = min(float(r["time_s"]) for r in store_reads)
    for r in rows(log_path):
        disk = int(r["disk"].split("-")[1])
        group, t = group_of_disk[disk], float(r["unix_time_s"]) - start_s
        if not up_at_first_read and t >= first_read_s:
            up_at_first_read = sorted({g for g, e in open_up.items() if e[1] is not None and e[2] is None}) or [None]
        state[disk] = r["state"]
        members = layout["groups"][group]
        episode = open_up.get(group)
        # A new spin-up once the last one has been spun down: a disk can rest for less than a
        # poll before the group spins up again, so standby is not waited for.
        if r["state"] == "spinning-up" and (episode is None or episode[2] is not None):
            open_up[group] = episode = [t, None, None]
            spin_ups.setdefault(group, []).append(episode)
        if episode is None:
            continue
        if episode[1] is None and all(state.get(d) != "spinning-up" for d in members):
            episode[1] = t
        if r["state"] == "spinning-down" and episode[2] is None:
            episode[2] = t
    for ups in spin_ups.values():
        for episode in ups:
            episode[1] = float("inf") if episode[1] is None else episode[1]
            episode[2] = float("inf") if episode[2] is None else episode[2]
    up_at_first_read = [g for g in up_at_first_read if g is not None]

first_read_s = min(j["issue_s"] for j in joined)
# Spin-ups commanded before the first read are the migration's (its last group may still be
# spinning up when the reads begin, by up to the log's alignment error).
during = sorted(((g, a, b) for g, ups in spin_ups.items() for a, b, _ in ups
                 if a >= first_read_s - 1.0), key=lambda e: e[1])

# The simulator's spin-ups, as its reads show them: a read that waited (dispatch more than a
# second after arrival) was dispatched when its group came up, and the reads one spin-up
# served are dispatched within milliseconds of each other.
sim_ups = sorted({(j["group"], round(j["sim_serve_s"], 1)) for j in joined
                  if j["sim_serve_s"] - j["sim_arrival_s"] > 1.0}, key=lambda e: e[1])


def describe(j):
    """The read's wait in each system: for its own group's spin-up, and the spin-ups of other
    groups that came up while it waited (it queued behind them)."""
    issue_s, store_end_s = j["issue_s"], j["issue_s"] + j["store_latency_s"]
    own = [(a, b) for g, a, b in during if g == j["group"] and b > issue_s - 0.5 and a < store_end_s]
    if not spin_ups:
        store = ""
    else:
        # What the group was doing when the read was issued: a closed loop issues a read the
        # moment another ends, when the scheduler may just be spinning that read's group down.
        downs = [c for a, b, c in spin_ups.get(j["group"], []) if c <= issue_s]
        ups = [(a, b, c) for a, b, c in spin_ups.get(j["group"], []) if a <= issue_s < c]
        if ups:
            state = "spinning up" if issue_s < ups[0][1] else "up"
        else:
            state = f"down {issue_s - max(downs):.1f} s" if downs else "resting"
        if own:
            a, b = own[-1]
            ahead = [f"g{g}" for g, a2, b2 in during if g != j["group"] and issue_s <= b2 <= a + 0.5]
            # The store's time after its group came up (the log is up to a poll late).
            store = (f"{state}; own up {a:.0f}-{b:.0f} +{store_end_s - b:.1f}"
                     + (f", behind {' '.join(ahead)}" if ahead else ""))
        else:
            store = state
    ahead = [f"g{g}" for g, up in sim_ups if g != j["group"] and j["sim_arrival_s"] < up < j["sim_serve_s"] - 1.0]
    sim = ("group up" if j["sim_serve_s"] - j["sim_arrival_s"] <= 1.0 else
           f"own up {j['sim_serve_s']:.0f}" + (f", behind {' '.join(ahead)}" if ahead else ""))
    return store, sim


print()
print("per read (times in s from the run's start; sim: arrival → dispatch → first byte → last byte)")
print(f"{'key':<16} {'grp':>3} {'KB':>5} {'issue':>7} {'store':>7} {'sim':>7} | {'arrive':>7} "
      f"{'serve':>7} {'first':>7} {'last':>7} | store's wait | simulator's wait")
for j in sorted(joined, key=lambda j: (j["issue_s"], j["sim_arrival_s"])):
    store, sim_wait = describe(j)
    sim_s = j["sim_last_byte_s"] - j["sim_arrival_s"]
    print(f"{j['key'].rsplit('/', 1)[-1]:<16} {j['group']:>3} {j['bytes'] / 1000:>5.0f} "
          f"{j['issue_s']:>7.2f} {j['store_latency_s']:>7.2f} {sim_s:>7.2f} | "
          f"{j['sim_arrival_s']:>7.2f} {j['sim_serve_s']:>7.2f} {j['sim_first_byte_s']:>7.2f} "
          f"{j['sim_last_byte_s']:>7.2f} | {store:<40} | {sim_wait}")


def percentile(values, q):
    # Nearest rank, as the bench's summaries take it: of 20 reads p50 is the 10th, p99 the 20th.
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, -(-len(ordered) * q // 100) - 1))]


store_s = [j["store_latency_s"] for j in joined]
sim_s = [j["sim_last_byte_s"] - j["sim_arrival_s"] for j in joined]
print()
for name, values in [("store (issue → last byte checked)", store_s),
                     ("simulator (arrival → last byte)", sim_s)]:
    print(f"{name:<34} mean {sum(values) / len(values):7.2f} s  p50 {percentile(values, 50):7.2f} s"
          f"  p99 {percentile(values, 99):7.2f} s")
sim = json.load(open(f"{work}/sim.json"))
if spin_ups:
    mean = sum(b - a for _, a, b in during) / len(during) if during else float("nan")
    migration = sum(1 for ups in spin_ups.values() for a, _, _ in ups if a < first_read_s - 1.0)
    print(f"store: groups up as the reads began {up_at_first_read}; {migration} group spin-ups in the "
          f"migration, {len(during)} for the reads (mean {mean:.1f} s until no disk spins up, mount "
          f"included)")
    print("store spin-ups for the reads (group, from-until-spun down): " + ", ".join(
        f"g{g} {a:.0f}-{b:.0f}-{c:.0f}" for g, ups in spin_ups.items() for a, b, c in ups
        if a >= first_read_s - 1.0))
print(f"simulator: {sim['spin_ups']} spin-ups (mean {sim['spin_up_s']['mean']:.1f} s); "
      "seen in its reads (group@up): " + ", ".join(f"g{g}@{t:.0f}" for g, t in sim_ups))
