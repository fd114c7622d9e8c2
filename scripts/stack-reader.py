#!/usr/bin/env python3
"""Reads files as the store's column threads read a migrated object's stacks, without the store:
one thread per file, `pread` of BATCH bytes in order (default 393,228: the GET's three framed
128 KiB fragments), the file kept open (`--open once`) or opened for every batch
(`--open per-batch`, as the store does), optionally no thread more than WINDOW batches ahead of
the slowest (`--window`, the read board's window; 0 = free-running). Prints the wall seconds.
Used beside scripts/cold-blocks.sh for docs/BENCHMARKS.md, "The extra requests were the store's
opening".

Usage: scripts/stack-reader.py [--open once|per-batch] [--window W] [--batch B] FILE...
"""
import argparse
import os
import threading
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--open", choices=["once", "per-batch"], default="once")
    parser.add_argument("--window", type=int, default=0)
    parser.add_argument("--batch", type=int, default=393228)
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    if args.batch < 1 or args.window < 0:
        parser.error("--batch must be positive and --window at least 0")
    done = 1 << 62
    progress = [0] * len(args.files)
    changed = threading.Condition()

    def column(index, path):
        batches = (os.path.getsize(path) + args.batch - 1) // args.batch
        kept = os.open(path, os.O_RDONLY) if args.open == "once" else None
        buffer = bytearray(args.batch)
        for batch in range(batches):
            if args.window:
                with changed:
                    while batch - min(progress) >= args.window:
                        changed.wait()
            descriptor = kept if kept is not None else os.open(path, os.O_RDONLY)
            os.preadv(descriptor, [buffer], batch * args.batch)
            if kept is None:
                os.close(descriptor)
            with changed:
                progress[index] = batch + 1
                changed.notify_all()
        if kept is not None:
            os.close(kept)
        with changed:
            progress[index] = done
            changed.notify_all()

    started = time.monotonic()
    threads = [threading.Thread(target=column, args=(i, f)) for i, f in enumerate(args.files)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print("%.3f" % (time.monotonic() - started))


if __name__ == "__main__":
    main()
