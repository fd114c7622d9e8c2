#!/usr/bin/env python3
"""Planner benchmarks for docs/BENCHMARKS.md: plan time per preset, 250,000-trial quality, and a
full exploration of every preset. Runs the release binary and reads the times it reports itself
(`elapsed_ms` in --json output), plus wall-clock time around each process.

Usage: python3 scripts/bench.py [--runs N] [--skip-explore] > bench.md
"""
import argparse, json, os, platform, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release", "spinwise")


def run(args):
    started = time.perf_counter()
    out = subprocess.run([BIN, *args], check=True, capture_output=True, text=True).stdout
    return out, (time.perf_counter() - started) * 1e3


def presets():
    out, _ = run(["presets", "--json"])
    return [p["name"] for p in json.loads(out)]


def machine():
    model = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            model = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{model}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--skip-explore", action="store_true")
    args = parser.parse_args()
    subprocess.run(["cargo", "build", "--release", "-p", "spinwise-cli"], check=True, cwd=ROOT, stdout=sys.stderr)
    print(f"Machine: {machine()}  \nDate: {time.strftime('%Y-%m-%d')}  \nBinary: `cargo build --release -p spinwise-cli`\n")
    print("## Planning one configuration\n")
    print(f"`spinwise plan --preset NAME --json`, {args.runs} runs; planner time is `elapsed_ms` (min / median), process time includes start-up and parsing.\n")
    print("| preset | disks | n | groups | k+r (f) | active (bound) | spinning | efficient | attempts | plan ms min | median | process ms median |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    workdir = tempfile.mkdtemp(prefix="spinwise-bench-")
    for name in presets():
        times, walls = [], []
        for _ in range(args.runs):
            out, wall = run(["plan", "--preset", name, "--json"])
            result = json.loads(out)
            times.append(result["elapsed_ms"])
            walls.append(wall)
        r = result
        print(f"| {name} | {r['disks']} | {r['group_size']} | {r['groups']} | {r['k']}+{r['r']} ({r['f']}) | {r['max_active_groups']} ({r['max_active_groups_bound']}) | {r['max_spinning_groups']} | {r['efficient']} | {r['solver']['attempts']} | {min(times):.0f} | {statistics.median(times):.0f} | {statistics.median(walls):.0f} |")
    print("\n## Quality, 250,000 trials\n")
    print("`spinwise plan --preset pelican [--layout pelican-manual] --out L && spinwise quality L --json` (default 250,000 trials, seed 1), 3 runs.\n")
    print("| layout | low load | high load | trials | ms min | median |")
    print("|---|---|---|---|---|---|")
    for label, extra in [("pelican synthesized", []), ("pelican manual (Pelican §2.2)", ["--layout", "pelican-manual"]), ("pelican-prototype", None), ("rack-e-1920", None), ("ocp-cold-storage", None)]:
        preset = label.split()[0]
        layout = os.path.join(workdir, f"{label.replace(' ', '_')}.json")
        run(["plan", "--preset", preset, "--out", layout, *(extra or [])])
        times = []
        for _ in range(3):
            out, _ = run(["quality", layout, "--json"])
            q = json.loads(out)
            times.append(q["elapsed_ms"])
        print(f"| {label} | {q['low_load']:.4f} | {q['high_load']:.4f} | {q['trials']} | {min(times):.0f} | {statistics.median(times):.0f} |")
    if args.skip_explore:
        return
    print("\n## Full exploration\n")
    print("`spinwise explore --preset NAME --out DIR --json` (every configuration planned, one worker per core).\n")
    print("| preset | configurations | efficient | inefficient | no solution | walk ms | total s |")
    print("|---|---|---|---|---|---|---|")
    for name in presets():
        out, _ = run(["explore", "--preset", name, "--out", os.path.join(workdir, name), "--json"])
        s = json.loads(out)
        print(f"| {name} | {s['configurations']} | {s['efficient']} | {s['inefficient']} | {s['no_solution']} | {s['explore_ms']:.1f} | {s['elapsed_ms'] / 1e3:.1f} |", flush=True)


if __name__ == "__main__":
    main()
