#!/usr/bin/python3
"""Merges the JSON files of several rounds of one benchmark (attnscope_bench or torch_reference.py, the same
arguments each round) into one: every timing takes the round with the lowest median, and the lowest min_ms
of all rounds; the machine probes (FMA peak, DRAM read, GEMM rates) take their highest. On a shared machine
noise only ever adds time, and run_comparison.sh alternates the two tools round by round, so both sides get
the same chances at the machine's quiet moments.
Usage: merge_rounds.py OUT.json ROUND1.json ROUND2.json ..."""
import json
import sys

PROBES = {"fma_peak_gflops", "read_bandwidth_gbs", "eigen_gemm_2048_gflops", "kernel_gemm_2048_gflops"}


def merge(values):
    first = values[0]
    if isinstance(first, dict):
        if "median_ms" in first and all(isinstance(v, dict) and "median_ms" in v for v in values):
            best = dict(min(values, key=lambda v: v["median_ms"]))
            mins = [v["min_ms"] for v in values if "min_ms" in v]
            if mins:
                best["min_ms"] = min(mins)
            best["rounds"] = len(values)
            return best
        out = {}
        for key, v in first.items():
            same = [x[key] for x in values if isinstance(x, dict) and key in x]
            out[key] = max(same) if key in PROBES and all(isinstance(s, (int, float)) for s in same) else merge(same)
        return out
    return first


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    rounds = [json.load(open(p)) for p in sys.argv[2:]]
    json.dump(merge(rounds), open(sys.argv[1], "w"), indent=1)


if __name__ == "__main__":
    main()
