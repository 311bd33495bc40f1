#!/usr/bin/env bash
# What the audit hash chain costs a cascade revoke of a large tree: the same cascade
# timed with the chain and without it (a baseline build with constant hashes and no chain
# trigger), interleaved in one run, reported as medians and their ratio.
#
#   CHAIN_COST_SESSIONS=100000 CHAIN_COST_ROUNDS=7 perf/chain_cost.sh
set -euo pipefail
cd "$(dirname "$0")/.."
n="${CHAIN_COST_SESSIONS:-100000}"
rounds="${CHAIN_COST_ROUNDS:-7}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

chained() { cargo bench -q -p session-ledger-perf --bench chain_cost -- "$@"; }
unchained() {
    RUSTFLAGS="--cfg session_ledger_unchained" CARGO_TARGET_DIR=target/unchained \
        cargo bench -q -p session-ledger-perf --bench chain_cost -- "$@"
}
chained >/dev/null     # build both before timing anything
unchained >/dev/null
chained build "$work/template.db" "$n"
for _ in $(seq "$rounds"); do
    chained measure "$work/template.db" "$work"
    unchained measure "$work/template.db" "$work"
done | tee "$work/results"
python3 - "$work/results" <<'PY'
import statistics, sys
runs, peak = {}, {}
for line in open(sys.argv[1]):
    kind, count, ms, kib = line.split()
    runs.setdefault(kind, []).append(float(ms))
    peak[kind] = max(peak.get(kind, 0), int(kib))
c, u = statistics.median(runs["chained"]), statistics.median(runs["unchained"])
print(f"cascade of {count} sessions, median of {len(runs['chained'])} runs each:")
print(f"  with the hash chain:    {c:.1f} ms")
print(f"  without the hash chain: {u:.1f} ms")
print(f"  ratio chained/unchained: {c / u:.2f}")
print(f"  peak resident memory of a cascade process: {peak['chained'] / 1024:.1f} MiB with the chain, {peak['unchained'] / 1024:.1f} MiB without")
PY
