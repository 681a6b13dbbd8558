#!/usr/bin/env bash
# sim-instructions.sh [REV...]: counts, under cachegrind, the instructions one op of
# BenchmarkFatTreePermutation executes (50 ms of the k = 4 fat-tree permutation, the same
# packet-hops at every revision whose results are unchanged) with reef built from each REV
# and from the work tree, and prints instructions per packet-hop, simulated D1 misses and
# the parts the instructions go to. Unlike CPU time on a shared, loaded machine these
# counts repeat to a fraction of a percent, so they resolve changes of a few percent.
# Needs valgrind. Takes about a minute per build.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "sim-instructions: needs valgrind" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'for d in "$tmp"/src-*; do [ -d "$d" ] && git worktree remove --force "$d" >/dev/null 2>&1; done; rm -rf "$tmp"' EXIT
bins=()
for rev in "$@"; do
	git worktree add --detach -q "$tmp/src-$rev" "$rev"
	(cd "$tmp/src-$rev/emulator/sim" && go test -c -o "$tmp/$rev.test" .)
	bins+=("$rev")
done
(cd emulator/sim && go test -c -o "$tmp/worktree.test" .)
bins+=(worktree)

for b in "${bins[@]}"; do
	# Valgrind does not decode RDTSCP, which the Go runtime executes now and then when
	# a lock is contended: such a run dies early, so it is retried.
	ok=
	for _ in 1 2 3 4 5 6; do
		out=$(cd emulator/sim && GOMAXPROCS=1 GOGC=off valgrind --tool=cachegrind --cache-sim=yes \
			--cachegrind-out-file="$tmp/$b.cg" "$tmp/$b.test" -test.run '^$' \
			-test.bench '^BenchmarkFatTreePermutation$' -test.benchtime 1x 2>&1) || true
		if grep -q '^PASS' <<<"$out"; then ok=1; break; fi
	done
	[ -n "$ok" ] || { echo "$b: every cachegrind run died" >&2; exit 1; }
	hops=$(awk '{for (i = 1; i <= NF; i++) if ($i == "hops/op") print $(i-1)}' <<<"$out")
	ir=$(awk '/I *refs:/ {gsub(",", "", $4); print $4}' <<<"$out")
	d1=$(awk '/D1  misses:/ {gsub(",", "", $4); print $4}' <<<"$out")
	echo "$b: $((ir / hops)) instructions per packet-hop ($ir for $hops hops), $d1 D1 misses"
	cg_annotate --show=Ir --threshold=0 "$tmp/$b.cg" 2>/dev/null | awk '
	/PROGRAM TOTALS/ && !tot { gsub(",", "", $1); tot = $1 }
	/file:function/ { p = 1; next }
	p && /^-- / { p = 0 }
	p && $1 ~ /^[0-9,]+$/ {
		n = $1; gsub(",", "", n); f = $NF; sub(/^[^:]*:/, "", f)
		c = "other"
		if (f ~ /^reef\/fabric\.\(\*Engine\)/ || f ~ /^reef\/fabric\.before/) c = "engine queue"
		else if (f ~ /^reef\/fabric\./) c = "fabric node glue"
		else if (f ~ /^reef\/switchd/) c = "switch pipeline"
		else if (f ~ /^reef\/cc\//) c = "cc"
		else if (f ~ /^reef\/hostd/) c = "host transport and NIC"
		else if (f ~ /countEgress/) c = "sim path counting"
		else if (f ~ /sampl|Snapshots/) c = "sampling"
		else if (f ~ /^reef\/wire/) c = "wire (not inlined)"
		else if (f ~ /^(runtime|internal\/runtime)/) c = "Go runtime"
		s[c] += n
	}
	END { for (c in s) printf "    %5.1f%%  %s\n", 100 * s[c] / tot, c }' | sort -rn
done
