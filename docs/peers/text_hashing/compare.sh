#!/usr/bin/env bash
# Documents per second per core: ours (BenchmarkDocuments: passages, and
# passages with their hashed vectors, per segmenter) beside scikit-learn's
# HashingVectorizer (PyPI, installed into a virtual environment at run time,
# never copied into the repository) on the same 1,000 documents of the text
# development set, in the same run, both pinned to one core.
#
#   docs/peers/text_hashing/compare.sh
#   MIMLSTREAM_TEXT_DEV=PATH  docs.jsonl (default ../shared/data/media/text_dev/docs.jsonl)
#   VENV=DIR                  the virtual environment (default ~/.cache/mimlstream/sklearn-venv)
#   CORE=N                    the core both sides run on (default 0)
#
# The two sides do not do the same work: scikit-learn's vectorizer has no
# stemmer, a regular-expression tokenizer instead of UAX #29 words, and no
# offsets; its "windows" cases rebuild Andrews's passages from its own
# tokens in Python before vectorizing them (counted in its time, as our
# segmentation is in ours). Ours is timed by go test -bench (wall clock of
# one goroutine, GOMAXPROCS=1), scikit-learn's by time.process_time (CPU),
# so a loaded machine can only slow our side.
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
