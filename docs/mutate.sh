#!/usr/bin/env bash
# Mutation testing of the core packages (issue 18; docs/mutation.md says how
# to read the output). Not in CI: a full run costs about 40 minutes of CPU.
#
#   docs/mutate.sh gremlins [ROW...]   gremlins' mutants of each row's files
#   docs/mutate.sh hand [ROW...]       the hand mutations of docs/mutations.txt
#   docs/mutate.sh all [ROW...]        both (what `make mutate` runs)
#
# ROW is one of: orlr wire featurestore assign measure (default: all five).
# Output: one line per mutant, then a summary line per row; the raw
# gremlins reports are kept in $MUTATE_OUT (default: a temporary directory).
set -euo pipefail

GREMLINS_VERSION=v0.6.0
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ALL_ROWS="orlr wire featurestore assign measure"

# row_pkg ROW: the package directory of a row.
row_pkg() {
	case $1 in
	orlr) echo internal/models/orlr ;;
	wire) echo internal/stream/wire ;;
	featurestore) echo internal/featurestore ;;
	assign) echo internal/solver/assign ;;
	measure) echo internal/measure ;;
	*)
		echo "unknown row $1 (want one of: $ALL_ROWS)" >&2
		exit 2
		;;
	esac
}

# row_exclude ROW: a regexp of the package's files outside the row, which
# gremlins must not mutate (-E matches the path).
row_exclude() {
	case $1 in
	orlr) echo '(^|/)(config|kernel|model)\.go$' ;;
	wire) echo '(^|/)(deadletter|messages|doc)\.go$' ;;
	featurestore) echo '(^|/)(cache|compat|id|redis)\.go$' ;;
	*) echo '' ;;
	esac
}

# row_goflags ROW: flags for every go test of the row. orlr runs -short: it
# skips the 2.5-minute MSCV2 reproduction, which gremlins would otherwise
# run for each of ~200 mutants (the targeted tests are fast and exact).
row_goflags() {
	case $1 in
	orlr) echo -short ;;
	*) echo '' ;;
	esac
}

OUT=${MUTATE_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/mutate.XXXXXX")}
mkdir -p "$OUT"

run_gremlins() {
	local bin="$OUT/bin"
	if [ ! -x "$bin/gremlins" ]; then
		GOBIN="$bin" go install "github.com/go-gremlins/gremlins/cmd/gremlins@$GREMLINS_VERSION"
	fi
	local row pkg ex args k l t nc
	for row in "$@"; do
		pkg=$(row_pkg "$row")
		ex=$(row_exclude "$row")
		args=(unleash --workers "${MUTATE_WORKERS:-2}" --timeout-coefficient 10 -o "$OUT/$row.json")
		[ -n "$ex" ] && args+=(-E "$ex")
		# --test-cpu is not used: v0.6.0 passes it as one malformed argument.
		(cd "$ROOT" && GOFLAGS="$(row_goflags "$row")" "$bin/gremlins" "${args[@]}" "./$pkg") >"$OUT/$row.txt" 2>&1 || true
		grep -E '^ *(KILLED|LIVED|TIMED OUT|NOT COVERED|NOT VIABLE) ' "$OUT/$row.txt" | sed "s|^ *|$row  |" || true
		k=$(grep -cE '^ *KILLED ' "$OUT/$row.txt" || true)
		t=$(grep -cE '^ *TIMED OUT ' "$OUT/$row.txt" || true)
		l=$(grep -cE '^ *LIVED ' "$OUT/$row.txt" || true)
		nc=$(grep -cE '^ *NOT COVERED ' "$OUT/$row.txt" || true)
		summary gremlins "$row" "$((k + t))" "$((l + nc))" "killed $k, timed out $t, lived $l, not covered $nc"
	done
}

# summary MODE ROW KILLED SURVIVED DETAIL: score = killed / all mutants
# (time-outs count as killed, not-covered mutants as survivors).
summary() {
	local total=$(($3 + $4))
	if [ "$total" -eq 0 ]; then
		printf 'SCORE %-8s %-12s no mutants\n' "$1" "$2"
		return
	fi
	printf 'SCORE %-8s %-12s %d/%d = %s%%  (%s)\n' "$1" "$2" "$3" "$total" \
		"$(awk -v a="$3" -v b="$total" 'BEGIN { printf "%.1f", 100 * a / b }')" "$5"
}

# run_hand applies each mutation of docs/mutations.txt (one a line:
# row @@ file:line @@ old text @@ new text @@ the fault it stands for; the
# first occurrence of the old text on that line is replaced, an empty new
# text deletes it) for the given rows to
# a temporary copy of its file, builds the package with that copy swapped
# in by `go test -overlay` (the worktree is never modified, so an
# interrupted run leaves nothing to restore), and runs the package's tests.
# A mutation whose text is no longer on its line is reported STALE and
# makes the script fail: the list must follow the code.
run_hand() {
	local list="$ROOT/docs/mutations.txt" stale=0 row
	for row in "$@"; do
		row_pkg "$row" >/dev/null
		local killed=0 survived=0 nonviable=0 n=0
		local entry lrow loc old new why file line src tmp
		while IFS= read -r entry; do
			# Fields are separated by @@, which Go source never contains
			# (unlike |, which || and |= do).
			IFS=$'\x1f' read -r lrow loc old new why <<<"${entry//@@/$'\x1f'}"
			lrow=$(trim "$lrow")
			case $lrow in '' | '#'*) continue ;; esac
			[ "$lrow" = "$row" ] || continue
			loc=$(trim "$loc") old=$(trim "$old") new=$(trim "$new") why=$(trim "$why")
			file=${loc%%:*} line=${loc##*:}
			src="$ROOT/$(row_pkg "$row")/$file"
			n=$((n + 1))
			tmp="$OUT/hand-$row-$n-$file"
			if ! OLD="$old" NEW="$new" awk -v L="$line" '
				NR == L { i = index($0, ENVIRON["OLD"]); if (i == 0) exit 3
				          $0 = substr($0, 1, i - 1) ENVIRON["NEW"] substr($0, i + length(ENVIRON["OLD"])) }
				{ print }' "$src" >"$tmp"; then
				printf '%s  STALE       %s:%s  %q not on that line\n' "$row" "$file" "$line" "$old"
				stale=1
				continue
			fi
			printf '{"Replace":{"%s":"%s"}}\n' "$src" "$tmp" >"$tmp.overlay.json"
			local flags
			flags=$(row_goflags "$row")
			if ! (cd "$ROOT" && go test -overlay "$tmp.overlay.json" -count=1 -run '^$' $flags "./$(row_pkg "$row")" >"$tmp.build.log" 2>&1); then
				printf '%s  NOT VIABLE  %s:%s  %s\n' "$row" "$file" "$line" "$why"
				nonviable=$((nonviable + 1))
				continue
			fi
			if (cd "$ROOT" && timeout 600 go test -overlay "$tmp.overlay.json" -count=1 -failfast $flags "./$(row_pkg "$row")" >"$tmp.test.log" 2>&1); then
				printf '%s  SURVIVED    %s:%s  %s\n' "$row" "$file" "$line" "$why"
				survived=$((survived + 1))
			else
				printf '%s  KILLED      %s:%s  %s\n' "$row" "$file" "$line" "$why"
				killed=$((killed + 1))
			fi
		done <"$list"
		summary hand "$row" "$killed" "$survived" "not viable $nonviable"
	done
	return $stale
}

trim() {
	local s=$1
	s=${s#"${s%%[![:space:]]*}"}
	s=${s%"${s##*[![:space:]]}"}
	printf '%s' "$s"
}

mode=${1:-all}
shift || true
rows=("$@")
[ ${#rows[@]} -gt 0 ] || read -r -a rows <<<"$ALL_ROWS"
echo "mutate: $mode on ${rows[*]}; reports in $OUT" >&2
case $mode in
gremlins) run_gremlins "${rows[@]}" ;;
hand) run_hand "${rows[@]}" ;;
all)
	run_gremlins "${rows[@]}"
	run_hand "${rows[@]}"
	;;
*)
	echo "usage: $0 gremlins|hand|all [ROW...]" >&2
	exit 2
	;;
esac
