#!/usr/bin/env bash
# sim-identical.sh [REV] [EXPERIMENT...]: runs the reproductions (default: every
# experiments/*.yaml) on the sim backend with reef built from REV (default HEAD) and with
# reef built from the work tree, and compares every sweep point's summary.json byte for
# byte. A change that should move no result (a refactoring) must print "identical" for
# every point; exit status 1 when any point differs or exists on one side only.
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:-HEAD}
shift || true
exps=("$@")
[ ${#exps[@]} -gt 0 ] || exps=(experiments/*.yaml)

tmp=$(mktemp -d)
trap 'git worktree remove --force "$tmp/src" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
git worktree add --detach -q "$tmp/src" "$rev"
(cd "$tmp/src" && CGO_ENABLED=0 go build -o "$tmp/old/" ./cmd/reef)
CGO_ENABLED=0 go build -o "$tmp/new/" ./cmd/reef

status=0
for e in "${exps[@]}"; do
	name=$(basename "$e" .yaml)
	for side in old new; do
		# Each side reads the experiment from its own tree, so a re-baselined file is
		# compared as it was then and as it is now.
		src=.
		[ "$side" = old ] && src="$tmp/src"
		"$tmp/$side/reef" run "$src/$e" --backend sim --no-figures --out "$tmp/$side-$name" >/dev/null 2>&1 || true
	done
	while IFS= read -r f; do
		rel=${f#"$tmp/old-$name/"}
		if [ ! -f "$tmp/new-$name/$rel" ]; then
			echo "$name/$rel: only at $rev"
			status=1
		elif cmp -s "$f" "$tmp/new-$name/$rel"; then
			echo "$name/$rel: identical"
		else
			echo "$name/$rel: DIFFERS"
			status=1
		fi
	done < <(find "$tmp/old-$name" -name summary.json | sort)
	while IFS= read -r f; do
		rel=${f#"$tmp/new-$name/"}
		[ -f "$tmp/old-$name/$rel" ] || { echo "$name/$rel: only in the work tree"; status=1; }
	done < <(find "$tmp/new-$name" -name summary.json | sort)
done
exit $status
