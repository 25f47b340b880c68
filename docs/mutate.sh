#!/usr/bin/env bash
# Mutation testing of the core packages (docs/mutation.md says how
# to read the output). Not in CI: a full run costs about 40 minutes of CPU.
#
#   docs/mutate.sh gremlins [ROW...]   gremlins' mutants of each row's files
#   docs/mutate.sh hand [ROW...]       the hand mutations of docs/mutations.txt
#   docs/mutate.sh all [ROW...]        both (what `make mutate` runs)
#   docs/mutate.sh check [ROW...]      only that every hand mutation's text is
#                                      still on its line (no tests run; `make
#                                      vet`, and so CI, runs it)
#
# ROW is one of: orlr wire featurestore assign measure (default: all five).
# Output: one line per mutant, then a summary line per row; the raw
# gremlins reports are kept in $MUTATE_OUT (default: a temporary directory).
# MUTATE_REUSE=1 scores an existing $MUTATE_OUT/ROW.txt instead of running
# gremlins again; MUTATE_WORKERS sets gremlins' parallelism (default 2).
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
	wire) echo '(^|/)(deadletter|messages|doc|annotation)\.go$' ;;
	featurestore) echo '(^|/)(compat|id)\.go$' ;;
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
		if [ "${MUTATE_REUSE:-0}" = 1 ] && [ -s "$OUT/$row.txt" ]; then
			echo "mutate: $row: reusing $OUT/$row.txt" >&2
		else
			(cd "$ROOT" && GOFLAGS="$(row_goflags "$row")" "$bin/gremlins" "${args[@]}" "./$pkg") </dev/null >"$OUT/$row.txt" 2>&1 || true
		fi
		grep -E '^ *(KILLED|LIVED|TIMED OUT|NOT VIABLE) ' "$OUT/$row.txt" | sed "s|^ *|$row  |" || true
		k=$(grep -cE '^ *KILLED ' "$OUT/$row.txt" || true)
		t=$(grep -cE '^ *TIMED OUT ' "$OUT/$row.txt" || true)
		l=$(grep -cE '^ *LIVED ' "$OUT/$row.txt" || true)
		nc=$(grep -cE '^ *NOT COVERED ' "$OUT/$row.txt" || true)
		rerun_uncovered "$row"
		summary gremlins "$row" "$((k + t + RERUN_KILLED))" "$((l + RERUN_LIVED))" \
			"killed $k, timed out $t, lived $l; not covered $nc, re-run: killed $RERUN_KILLED, lived $RERUN_LIVED"
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

# test_mutant ROW SRC TMP builds ROW's package with TMP in place of SRC (go
# test -overlay: the worktree is never modified, so an interrupted run
# leaves nothing to restore), runs its tests and prints killed, survived or
# nonviable (it does not compile).
test_mutant() {
	local pkg flags
	pkg=$(row_pkg "$1")
	flags=$(row_goflags "$1")
	printf '{"Replace":{"%s":"%s"}}\n' "$2" "$3" >"$3.overlay.json"
	# shellcheck disable=SC2086 # flags is empty or one flag
	if ! (cd "$ROOT" && go test -overlay "$3.overlay.json" -count=1 -run '^$' $flags "./$pkg" </dev/null >"$3.build.log" 2>&1); then
		echo nonviable
	# shellcheck disable=SC2086
	elif (cd "$ROOT" && timeout 600 go test -overlay "$3.overlay.json" -count=1 -failfast $flags "./$pkg" </dev/null >"$3.test.log" 2>&1); then
		echo survived
	else
		echo killed
	fi
}

# rerun_uncovered ROW applies gremlins' NOT COVERED mutants itself. They
# are all conditions in the case clauses of tagless switches, which Go's
# cover profile attributes to no block, so gremlins never runs them
# although the tests execute them. Prints one line per mutant and sets
# RERUN_KILLED and RERUN_LIVED.
rerun_uncovered() {
	local row=$1 kind loc file line col src tmp n=0
	RERUN_KILLED=0 RERUN_LIVED=0
	while read -r kind loc; do
		file=${loc%%:*} line=${loc#*:} col=${line#*:} line=${line%%:*}
		src="$ROOT/$(row_pkg "$row")/$file"
		n=$((n + 1))
		tmp="$OUT/uncovered-$row-$n-$file"
		if ! awk -v L="$line" -v C="$col" -v K="$kind" '
			BEGIN {
				neg["=="] = "!="; neg["!="] = "=="; neg["<"] = ">="; neg["<="] = ">"; neg[">"] = "<="; neg[">="] = "<"
				bnd["<"] = "<="; bnd["<="] = "<"; bnd[">"] = ">="; bnd[">="] = ">"
			}
			NR == L {
				op = substr($0, C, 2)
				if (!(op in neg)) op = substr($0, C, 1)
				rep = (K == "CONDITIONALS_NEGATION") ? neg[op] : (K == "CONDITIONALS_BOUNDARY") ? bnd[op] : ""
				if (rep == "") exit 3
				$0 = substr($0, 1, C - 1) rep substr($0, C + length(op))
			}
			{ print }' "$src" >"$tmp"; then
			printf '%s  NOT COVERED %s at %s (not re-run: unknown operator)\n' "$row" "$kind" "$loc"
			RERUN_LIVED=$((RERUN_LIVED + 1))
			continue
		fi
		case $(test_mutant "$row" "$src" "$tmp") in
		killed) printf '%s  RERUN KILLED %s at %s\n' "$row" "$kind" "$loc"; RERUN_KILLED=$((RERUN_KILLED + 1)) ;;
		*) printf '%s  RERUN LIVED  %s at %s\n' "$row" "$kind" "$loc"; RERUN_LIVED=$((RERUN_LIVED + 1)) ;;
		esac
	done < <(sed -nE 's/^ *NOT COVERED ([A-Z_]+) at ([^ ]+).*/\1 \2/p' "$OUT/$row.txt")
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
			# check mode: the text is where the list says; nothing to run.
			[ "${CHECK_ONLY:-0}" = 1 ] && continue
			case $(test_mutant "$row" "$src" "$tmp") in
			killed) printf '%s  KILLED      %s:%s  %s\n' "$row" "$file" "$line" "$why"; killed=$((killed + 1)) ;;
			survived) printf '%s  SURVIVED    %s:%s  %s\n' "$row" "$file" "$line" "$why"; survived=$((survived + 1)) ;;
			*) printf '%s  NOT VIABLE  %s:%s  %s\n' "$row" "$file" "$line" "$why"; nonviable=$((nonviable + 1)) ;;
			esac
		done <"$list"
		[ "${CHECK_ONLY:-0}" = 1 ] || summary hand "$row" "$killed" "$survived" "not viable $nonviable"
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
check) CHECK_ONLY=1 run_hand "${rows[@]}" && echo "mutate: every hand mutation is on its line" >&2 ;;
all)
	run_gremlins "${rows[@]}"
	run_hand "${rows[@]}"
	;;
*)
	echo "usage: $0 gremlins|hand|all|check [ROW...]" >&2
	exit 2
	;;
esac
