#!/usr/bin/env python3
# A trace of read sessions with locality, for `spinwise sim --trace` (docs/BENCHMARKS.md, "Idle
# spin-down"): sessions arrive Poisson (mean gap S s); each picks a group uniformly and reads N
# objects of that group with exponential think times (mean G s). Keys are chosen so that
# FNV-1a 64(key) mod groups is the session's group (the simulator's key -> group rule).
#
# usage: idle_sessions.py GROUPS S N G HOURS SEED SIZE_BYTES > trace.csv
import random, sys
groups, S, N, G, hours, seed, size = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
def fnv(s):
    h=0xcbf29ce484222325
    for b in s.encode():
        h^=b; h=(h*0x100000001b3)&0xffffffffffffffff
    return h
keys={g:[] for g in range(groups)}
i=0
while min(len(v) for v in keys.values())<200:
    k=f"obj{i}"; keys[fnv(k)%groups].append(k); i+=1
rng=random.Random(seed)
t=0.0; end=hours*3600; recs=[]
while True:
    t+=rng.expovariate(1/S)
    if t>=end: break
    g=rng.randrange(groups); u=t
    for n in range(N):
        if u>=end: break
        recs.append((u,rng.choice(keys[g])))
        u+=rng.expovariate(1/G)
recs.sort()
print("time_s,operation,key,size_bytes")
for u,k in recs: print(f"{u:.6f},read,{k},{size}")
