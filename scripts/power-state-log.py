#!/usr/bin/env python3
# Logs every change of a store's disk power states, read from outside the process that drives
# them (DATA/disks/*/.power-state, as `spinwise store disks` reads them), because `spinwise bench
# --store` counts no spin-ups of its own: bench-vs-sim.sh compares the store's spin-ups with the
# simulator's from this log. Sleeps 0.2 s between polls (spin-ups take 15-30 s, so none is
# missed; a disk can pass through a shorter state unseen) until process PID has exited.
#
# Usage: power-state-log.py DATA OUT.csv PID    Writes `unix_time_s,disk,state` rows.
import os, sys, time

data, out, pid = sys.argv[1], sys.argv[2], int(sys.argv[3])
disks_dir = os.path.join(data, "disks")
last = {}
with open(out, "w") as log:
    log.write("unix_time_s,disk,state\n")
    while True:
        now_s = time.time()
        try:
            names = sorted(os.listdir(disks_dir))
        except FileNotFoundError:
            names = []
        for name in names:
            try:
                with open(os.path.join(disks_dir, name, ".power-state")) as f:
                    state = f.read().strip()
            except FileNotFoundError:
                # A disk at rest has no file (docs/disks.md, "Power-state file"); a pulled one
                # has no directory.
                state = "standby" if os.path.isdir(os.path.join(disks_dir, name)) else "failed"
            except OSError:
                continue
            if last.get(name) != state:
                last[name] = state
                log.write(f"{now_s:.3f},{name},{state}\n")
        log.flush()
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
