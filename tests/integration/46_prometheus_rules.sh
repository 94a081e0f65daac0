#!/bin/sh
# The operators' Prometheus files: the alerting rules are valid
# (promtool check rules) and fire as their unit tests say (promtool test
# rules: a node drained by scout, verdicts not forwarded for 5 minutes, the
# service refusing requests for its own trouble but not for users', the
# service down); the Grafana dashboard is valid JSON with a query in every
# panel (test_ledgerd checks each names a metric scout-ledgerd exports).
. "$top_srcdir/tests/integration/lib.sh"
command -v promtool >/dev/null || fail "promtool not found (Debian package prometheus; scripts/install-deps installs it)"
P=$top_srcdir/contrib/prometheus
promtool check rules "$P/scout-alerts.yml" > "$T/check.txt" 2>&1 || fail "promtool check rules: $(cat "$T/check.txt")"
grep -q "SUCCESS: 4 rules found" "$T/check.txt" || fail "promtool check rules: $(cat "$T/check.txt")"
(cd "$P" && promtool test rules scout-alerts.test.yml) > "$T/test.txt" 2>&1 || fail "promtool test rules: $(cat "$T/test.txt")"
# The unit tests can fail: a rule that no longer fires is caught.
sed 's/scout_forward_backlog_oldest_seconds > 300/scout_forward_backlog_oldest_seconds > 3000/' "$P/scout-alerts.yml" > "$T/scout-alerts.yml"
cp "$P/scout-alerts.test.yml" "$T/"
rc=0; (cd "$T" && promtool test rules scout-alerts.test.yml) > "$T/broken.txt" 2>&1 || rc=$?
[ "$rc" -ne 0 ] || fail "promtool test rules passed a rule that does not fire"
grep -q "ScoutVerdictsNotForwarded" "$T/broken.txt" || fail "promtool did not name the broken rule: $(cat "$T/broken.txt")"
D=$top_srcdir/contrib/grafana/scout-dashboard.json
expect_eq "dashboard panels without a query" "$(jq '[.panels[] | select((.targets // []) | length == 0)] | length' "$D")" 0
expect_eq "dashboard queries" "$(jq '[.panels[].targets[].expr] | length >= 10' "$D")" true
pass "prometheus: the alerting rules check and their unit tests pass (and fail when a rule is broken); the dashboard has a query in every panel"
