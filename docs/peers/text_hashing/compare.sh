#!/usr/bin/env bash
# Documents per CPU second on one core: ours (BenchmarkDocuments: passages,
# and passages with their hashed vectors, per segmenter, with no term cache,
# with a new empty one per pass over the documents, and with a warm one)
# beside scikit-learn's HashingVectorizer (PyPI, installed into a virtual
# environment at run time, never copied into the repository) on the same
# 1,000 documents of the text development set, in the same run, both pinned
# to one core.
#
#   docs/peers/text_hashing/compare.sh
#   MIMLSTREAM_TEXT_DEV=PATH  docs.jsonl (default ../shared/data/media/text_dev/docs.jsonl)
#   VENV=DIR                  the virtual environment (default ~/.cache/mimlstream/sklearn-venv)
#   CORE=N                    the core both sides run on (default 0)
#
# The two sides do not do the same work: scikit-learn's vectorizer has no
# stemmer, a regular-expression tokenizer instead of UAX #29 words, and no
# offsets; its "paragraphs" and "windows" cases cut the documents in Python
# first (counted in its time, as our segmentation is in ours). Both sides
# are timed in process CPU time (ours: the benchmark's docs/cpu-s from
# getrusage; scikit-learn's: time.process_time, the best of 5 rounds), which
# other processes on a shared machine disturb less than the wall clock.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
HERE=$ROOT/docs/peers/text_hashing
DOCS=${MIMLSTREAM_TEXT_DEV:-$(cd "$ROOT/.." && pwd)/shared/data/media/text_dev/docs.jsonl}
VENV=${VENV:-$HOME/.cache/mimlstream/sklearn-venv}
CORE=${CORE:-0}
[ -f "$DOCS" ] || { echo "compare: no $DOCS (set MIMLSTREAM_TEXT_DEV)" >&2; exit 2; }

if [ ! -x "$VENV/bin/python" ]; then
	python3 -m venv "$VENV"
	"$VENV/bin/pip" install --quiet scikit-learn
fi

echo "== ours (go test -bench BenchmarkDocuments -cpu 1, core $CORE)"
(cd "$ROOT" && MIMLSTREAM_TEXT_DEV=$DOCS taskset -c "$CORE" go test -run '^$' -bench BenchmarkDocuments -benchtime 5x -cpu 1 -count 1 ./internal/media/text/)
echo "== scikit-learn (core $CORE)"
taskset -c "$CORE" "$VENV/bin/python" "$HERE/hashing.py" "$DOCS" 5
