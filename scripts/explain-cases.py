#!/usr/bin/env python3
"""Seeded random `mmaemu explain --cases` lines over the built-in profiles (shapes, formats, out dtypes, fast/slow,
auto and explicit splits), for comparing two builds' decisions byte for byte:

    python3 scripts/explain-cases.py 10000 > cases.jsonl
    OLD/mmaemu explain --cases cases.jsonl --json > old.jsonl; NEW/mmaemu explain --cases cases.jsonl --json > new.jsonl
    cmp old.jsonl new.jsonl
"""
import json
import random
import sys

PROFILES = ["ada", "ada-te", "ada-ws0", "hopper", "hopper-te", "hopper-ws0", "hopper-experimental",
            "b200-mma-sync-experimental", "b200-tcgen05-experimental", "rtx50-mma-sync-experimental"]


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 20261206
    r = random.Random(seed)
    for i in range(count):
        if r.random() < 0.5:
            m = r.choice([1, 2, 16, 32, 64, 128, 254, 272, 512, 1024, 2048, 4096])
            n = r.choice([16, 32, 96, 1024, 1920, 4096, 5760, 12288, 14336])
            k = r.choice([16, 64, 128, 1024, 1920, 4096, 5760, 8192, 16384, 65536])
        else:
            m, n = r.randint(0, 5000), r.randint(1, 400) * 16
            k = r.randint(0, 1200) * 16 + (r.randint(1, 15) if r.random() < 0.1 else 0)
        case = {"id": f"c{i}", "m": m, "n": n, "k": k, "a": r.choice(["e4m3", "e5m2"]),
                "b": r.choice(["e4m3", "e5m2"]), "fast": r.random() < 0.5, "profile": r.choice(PROFILES)}
        out = r.choice([None, "float32", "bfloat16", "float16", "e4m3", "e5m2"])
        if out:
            case["out"] = out
        s = r.random()
        if s < 0.15:
            case["splitk"] = str(r.choice([1, 2, 3, 4]))
        elif s < 0.3:
            case["splitk"] = f"{r.choice([2, 3, 5, 8])},{r.choice(['serial', 'pairwise', 'contiguous'])}"
        print(json.dumps(case))


if __name__ == "__main__":
    main()
