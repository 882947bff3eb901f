"""Summarizes a `kiln bench --dump-profile` JSON: time by op and tactic, and the slowest steps.

    python3 profile_summary.py PROFILE.json [--top N]
"""
import argparse
import collections
import json

ap = argparse.ArgumentParser()
ap.add_argument("profile")
ap.add_argument("--top", type=int, default=25)
args = ap.parse_args()
steps = json.load(open(args.profile))
total = sum(s["ms"] for s in steps)
print(f"{total:.3f} ms summed over {len(steps)} steps")
by = collections.defaultdict(lambda: [0, 0.0])
for s in steps:
    key = f'{s["op"]:20s} {s.get("tactic", "").split(" ")[0:2]}'
    by[key][0] += 1
    by[key][1] += s["ms"]
for key, (n, ms) in sorted(by.items(), key=lambda kv: -kv[1][1]):
    print(f"  {key:60s} {n:4d} {ms:8.3f} ms {100 * ms / total:5.1f}%")
print(f"slowest {args.top}:")
for s in sorted(steps, key=lambda s: -s["ms"])[: args.top]:
    print(f'  {s["ms"]:.4f} {s["op"]:18s} {s.get("tactic", "")[:40]:40s} {s["name"][-60:]}')
