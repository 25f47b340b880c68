#!/usr/bin/env bash
# The service's SLIC superpixels and merged regions beside scikit-image's SLIC
# (PyPI, pinned below), on the same photos in the same run: boundary recall
# (tolerance 2 px), undersegmentation error, regions per photo and CPU
# milliseconds per photo, then BenchmarkPhoto (photos per CPU second).
#
#   docs/peers/slic/compare.sh [MANIFEST]   default ../shared/data/media/msrc_v2_dev/bags.jsonl
#   PYTHON=PATH   the Python that makes the venv (default python3)
#
# scikit-image is installed with pip into a venv under ~/.cache/mimlstream at
# run time, never copied into the project; the driver (slic_peer.py) and the
# measures' definitions (internal/media/imageseg/quality.go) are ours. Both
# sides run one photo at a time on one core.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
HERE=$ROOT/docs/peers/slic
SKIMAGE=0.26.0
MANIFEST=${1:-$ROOT/../shared/data/media/msrc_v2_dev/bags.jsonl}
VENV=${XDG_CACHE_HOME:-$HOME/.cache}/mimlstream/slic-venv-$SKIMAGE

[ -f "$MANIFEST" ] || { echo "compare: no manifest $MANIFEST" >&2; exit 2; }
if [ ! -x "$VENV/bin/python" ]; then
	"${PYTHON:-python3}" -m venv "$VENV"
	"$VENV/bin/pip" install -q "scikit-image==$SKIMAGE" pillow
fi

# Superpixel count and compactness of the service's defaults, for both.
read -r K M < <(cd "$ROOT" && go run ./docs/peers/slic/quality -params)
cd "$ROOT"
export GOMAXPROCS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
go run ./docs/peers/slic/quality "$MANIFEST"
"$VENV/bin/python" "$HERE/slic_peer.py" "$MANIFEST" "$K" "$M"
MIMLSTREAM_MSRC_DEV=$(dirname "$MANIFEST") go test -run '^$' -bench 'BenchmarkPhoto' -benchtime 355x -cpu 1 -count 1 ./internal/media/imagefeat
