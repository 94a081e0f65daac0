#!/bin/sh
# bench/fedad, a short run on a generated CSV (the full runs on public data
# are `make bench`): a natural split by a node column and a Dirichlet split,
# every method in both tables (equal rounds, convergence), per-client
# metrics, clients without enough outliers listed by name, the aggregation
# timing line; bad input names what was expected.
. "$top_srcdir/tests/integration/lib.sh"
F=$B/bench/fedad
CSV=$T/nodes.csv
# 6 nodes, each with its own offset (feature skew across nodes); outliers are
# far from every node's normal; node n5 has a single outlier (unscorable).
awk 'BEGIN {
  srand(7); print "node,a,b,c,label";
  for (n = 0; n < 6; n++) for (i = 0; i < 120; i++) {
    x = rand(); y = rand();
    printf "n%d,%.4f,%.4f,%.4f,ok\n", n, x + n, y - n, x * y + 0.1 * n
  }
  for (n = 0; n < 6; n++) for (i = 0; i < (n == 5 ? 1 : 8); i++)
    printf "n%d,%.4f,%.4f,%.4f,bad\n", n, 3 * rand() + n + 2, -3 * rand() - n, 4
}' > "$CSV"
"$F" --csv "$CSV" --label-column label --normal ok --client-column node --clients 8 --alphas 0.5 \
  --feature-skew 0 --participation 1 --seeds 1 --rounds 3 --max-rounds 6 --patience 2 --personalise-steps 10 \
  --threads 2 --out "$T/out.md" > "$T/stdout" 2> "$T/stderr" || fail "fedad failed: $(cat "$T/stderr")"
grep -q "6 clients by node" "$T/stdout" || fail "natural split not announced: $(head -3 "$T/stdout")"
for m in local-only FedAvg FedProx FedAvgM FedAdam matched clustered personalised centralised; do
  c=$(grep -c "^| natural (6 clients) | $m |" "$T/out.md")
  expect_eq "natural rows of $m (equal rounds, converged)" "$c" 2
  c=$(grep -c "^| Dirichlet 0.5 / 8 | $m |" "$T/out.md")
  expect_eq "Dirichlet rows of $m" "$c" 2
done
grep -q "^### At 3 rounds" "$T/out.md" || fail "no equal-rounds table"
grep -q "^### At convergence (early stopping: patience 2, at most 6 rounds)" "$T/out.md" || fail "no convergence table"
grep -q "^- natural (6 clients): n5 (.* normal, 1 outliers)" "$T/out.md" || fail "n5 not listed as unscorable: $(grep -A3 'could not be scored' "$T/out.md")"
# Per-client AUROC is a number in [0, 1] for every row.
awk -F'|' '/^\| (natural|Dirichlet)/ { split($4, a, " "); if (a[1] !~ /^[01]\.[0-9]+$/) { print; exit 1 } }' "$T/out.md" ||
  fail "a mean client AUROC is not a number"
grep -q "^Aggregation of one round, 100 clients, .* (target < 100 ms: " "$T/out.md" || fail "no aggregation timing"
grep -q "^- personalised (3 rounds): " "$T/out.md" || fail "no targets section"
# Bad input.
rc=0; "$F" --csv "$CSV" --label-column label --normal ok --client-column rack > "$T/o" 2>&1 || rc=$?
expect_eq "unknown client column: exit" "$rc" 2
grep -q "client-column rack: no such column" "$T/o" || fail "message: $(cat "$T/o")"
rc=0; "$F" --csv "$CSV" --label-column label --normal ok --outlier-split random > "$T/o" 2>&1 || rc=$?
expect_eq "bad outlier split: exit" "$rc" 2
grep -q "outlier-split: 'random'; expected uniform or proportional" "$T/o" || fail "message: $(cat "$T/o")"
rc=0; "$F" --csv "$CSV" --label-column label --normal nothing --client-column node > "$T/o" 2>&1 || rc=$?
expect_eq "no normal rows: exit" "$rc" 2
grep -q "normal: no row carries any of these labels" "$T/o" || fail "message: $(cat "$T/o")"
rc=0; "$F" --csv "$CSV" --label-column label --normal ok --client-column node --methods fedavg,best > "$T/o" 2>&1 || rc=$?
expect_eq "bad method: exit" "$rc" 2
grep -q "methods: 'best' is not one of" "$T/o" || fail "message: $(cat "$T/o")"
rc=0; "$F" --csv "$CSV" --label-column label --normal ok > "$T/o" 2>&1 || rc=$?
expect_eq "text column without --client-column: exit" "$rc" 2
grep -q "nodes.csv:2: column node: 'n0' is not a number" "$T/o" || fail "message: $(cat "$T/o")"
"$F" --help | grep -q -- "--client-column NAME" || fail "--help does not list --client-column"
pass "fedad: natural and Dirichlet splits, 9 methods x 2 tables, unscorable clients listed, bad input named"
