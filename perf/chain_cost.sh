#!/usr/bin/env bash
# What the audit hash chain costs a cascade revoke of a large tree, and a cascade's peak memory
# (see benches/chain_cost.rs): the library's cascade, and the same cascade replayed with plain
# SQL with the chain and without it, interleaved in one run, one process per measurement,
# reported as medians.
#
#   CHAIN_COST_SESSIONS=100000 CHAIN_COST_ROUNDS=7 perf/chain_cost.sh
set -euo pipefail
cd "$(dirname "$0")/.."
n="${CHAIN_COST_SESSIONS:-100000}"
rounds="${CHAIN_COST_ROUNDS:-7}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

chain_cost() { cargo bench -q -p session-ledger-perf --bench chain_cost -- "$@"; }
chain_cost >/dev/null 2>&1 # build it before timing anything
chain_cost build "$work" "$n"
sync # so that no timed fsync writes back the files the build made
sides=(ledger chained unchained)
for round in $(seq 0 $((rounds - 1))); do
    for k in 0 1 2; do # the side that goes first rotates from round to round
        chain_cost measure "${sides[$(((round + k) % 3))]}" "$work"
    done
done | tee "$work/results"
python3 - "$work/results" <<'PY'
import statistics, sys
runs, peak = {}, {}
for line in open(sys.argv[1]):
    side, count, ms, kib = line.split()
    runs.setdefault(side, []).append(float(ms))
    peak[side] = max(peak.get(side, 0), int(kib))
l, c, u = (statistics.median(runs[s]) for s in ("ledger", "chained", "unchained"))
cost = c - u
print(f"cascade of {count} sessions, median of {len(runs['ledger'])} runs each:")
print(f"  the ledger's cascade:            {l:.1f} ms")
print(f"  replayed with the hash chain:    {c:.1f} ms")
print(f"  replayed without the hash chain: {u:.1f} ms")
print(f"  the chain's cost: {cost:.1f} ms, {cost / l:.0%} of the ledger's cascade")
print(f"  ratio chained/unchained, replays: {c / u:.2f}; ledger's cascade against it less the chain: {l / (l - cost):.2f}")
print(f"  peak resident memory of the ledger's cascade process: {peak['ledger'] / 1024:.1f} MiB")
PY
