#!/usr/bin/env bash
# Ours (retrainer eval --model misvm|mi-svm, the defaults) beside misvm
# (Doran's Python package at the commit below, RBF, C = 10^4, gamma = 1/d: the
# setting that reproduces misvm's reference figures) on the same folds, interleaved,
# each run single-threaded, and a table of accuracy (mean over the fits ±
# standard deviation of the repeats' means) and CPU: user + system of each
# whole process, and in parentheses the fits' own (misvm: fit and predict,
# time.process_time; ours: the process CPU of the fits, train_cpu_seconds),
# with the ratio of the medians.
#
#   docs/peers/misvm/compare.sh [SET...]     SET: musk1 (5 x 10-fold),
#                                            elephant, fox (3 x 10); default all
#   RUNS=N        runs of each side per model and set (default 3)
#   MISVM_SRC=DIR a misvm checkout to use (default: cloned once from GitHub at
#                 the pinned commit into ~/.cache/mimlstream)
#   PYTHON=PATH   the Python with numpy, scipy, cvxopt and scikit-learn
#                 (default /usr/bin/python3; Debian: apt-get install
#                 python3-numpy python3-scipy python3-cvxopt python3-sklearn)
#
# misvm is fetched and run beside the project, never copied into it; the
# driver (run_misvm.py) is ours. Not part of `make test`: it needs the network
# (or MISVM_SRC), and a run of both models takes about 20 s on Musk1 and 5 to
# 6 minutes on Elephant or Fox (misvm's mi-SVM most of it).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
HERE=$ROOT/docs/peers/misvm
MISVM_COMMIT=b2118fe04d98c00436bdf8a0e4bbfb6082c5751c
RUNS=${RUNS:-3}
PY=${PYTHON:-/usr/bin/python3}
SETS=${*:-musk1 elephant fox}

die() { echo "compare: $*" >&2; exit 2; }

# set_info SET: data file, format for the driver, repeats.
set_info() {
	case $1 in
	musk1) echo "testdata/musk1/musk1.data musk 5" ;;
	elephant) echo "testdata/elephant/elephant.data mill 3" ;;
	fox) echo "testdata/fox/fox.data mill 3" ;;
	*) die "unknown set $1 (musk1, elephant, fox)" ;;
	esac
}

for set in $SETS; do
	set_info "$set" >/dev/null # an unknown set stops the script here, not in a subshell
done

"$PY" -c 'import numpy, scipy, cvxopt, sklearn' 2>/dev/null ||
	die "$PY lacks numpy, scipy, cvxopt or scikit-learn (Debian: apt-get install python3-numpy python3-scipy python3-cvxopt python3-sklearn)"
[ -x /usr/bin/time ] || die "needs /usr/bin/time (Debian: apt-get install time)"

src=${MISVM_SRC:-}
if [ -z "$src" ]; then
	src=${XDG_CACHE_HOME:-$HOME/.cache}/mimlstream/misvm-$MISVM_COMMIT
	if [ ! -d "$src/misvm" ]; then
		rm -rf "$src.tmp"
		git clone -q https://github.com/garydoranjr/misvm "$src.tmp"
		git -C "$src.tmp" checkout -q "$MISVM_COMMIT"
		mv "$src.tmp" "$src"
	fi
fi
[ -f "$src/misvm/__init__.py" ] || die "no misvm package in $src"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$ROOT" && go build -o "$work/retrainer" ./cmd/retrainer)

# Each run appends a line: set model side accuracy repeat_std cpu fit_cpu.
results=$work/results.txt
for set in $SETS; do
	read -r data fmt repeats <<<"$(set_info "$set")"
	folds=$work/$set.folds.json
	(cd "$ROOT" && "$work/retrainer" eval --data "$data" --model misvm --folds 10 --repeats "$repeats" --seed 1 \
		--workers 1 --folds-out "$folds" --json >/dev/null 2>&1)
	for run in $(seq "$RUNS"); do
		for pair in "MISVM misvm" "miSVM mi-svm"; do
			read -r peer ours <<<"$pair"
			echo "compare: $set $ours, run $run of $RUNS" >&2
			OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONPATH=$src \
				/usr/bin/time -o "$work/time" -f '%U %S' \
				"$PY" "$HERE/run_misvm.py" "$ROOT/$data" "$fmt" "$folds" "$peer" rbf 10000 inv-d >"$work/out"
			"$PY" - "$work/out" "$work/time" "$set" "$ours" misvm >>"$results" <<-'PY'
				import json, sys
				d = json.load(open(sys.argv[1])); u, s = map(float, open(sys.argv[2]).read().split()[-2:])
				print(sys.argv[3], sys.argv[4], sys.argv[5], d["accuracy"], d["repeat_std"], u + s, d["fit_cpu_seconds"])
			PY
			(cd "$ROOT" && /usr/bin/time -o "$work/time" -f '%U %S' "$work/retrainer" eval --data "$data" \
				--model "$ours" --folds 10 --repeats "$repeats" --seed 1 --workers 1 --json >"$work/out" 2>/dev/null)
			"$PY" - "$work/out" "$work/time" "$set" "$ours" ours >>"$results" <<-'PY'
				import json, sys
				d = json.load(open(sys.argv[1])); u, s = map(float, open(sys.argv[2]).read().split()[-2:])
				reps = {}
				for f in d["fold_results"]:
				    reps.setdefault(f["repeat"], []).append(f["metrics"]["bag_accuracy"])
				means = [sum(v) / len(v) for v in reps.values()]
				m = sum(means) / len(means)
				sd = (sum((x - m) ** 2 for x in means) / len(means)) ** 0.5
				print(sys.argv[3], sys.argv[4], sys.argv[5], 100 * d["bag_accuracy"]["mean"], 100 * sd, u + s,
				      d["train_cpu_seconds"])
			PY
		done
	done
done

"$PY" - "$results" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    s, m, side, acc, sd, cpu, fit = line.split()
    r = rows.setdefault((s, m), {}).setdefault(side, {"acc": float(acc), "sd": float(sd), "cpu": [], "fit": []})
    r["cpu"].append(float(cpu)); r["fit"].append(float(fit))
print("| set, model | misvm accuracy | ours accuracy | misvm CPU s (fits) | ours CPU s (fits) | ours / misvm, medians (fits) |")
print("|---|---|---|---|---|---|")
for (s, m), r in rows.items():
    p, o = r["misvm"], r["ours"]
    runs = lambda x: ", ".join("%.2f" % c for c in x["cpu"]) + " (" + ", ".join("%.2f" % c for c in x["fit"]) + ")"
    ratio = statistics.median(o["cpu"]) / statistics.median(p["cpu"])
    fratio = statistics.median(o["fit"]) / statistics.median(p["fit"])
    print("| %s %s | %.1f ± %.1f | %.1f ± %.1f | %s | %s | %.2f× (%.2f×) |" % (
        s, m, p["acc"], p["sd"], o["acc"], o["sd"], runs(p), runs(o), ratio, fratio))
PY
