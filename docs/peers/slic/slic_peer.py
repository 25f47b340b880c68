"""scikit-image's SLIC on the photos of a manifest, scored as ours are.

Prints one JSON line: mean boundary recall (tolerance 2 px), undersegmentation
error, segments and CPU milliseconds per photo (time.process_time around
slic() alone, on the decoded RGB array; L*a*b* conversion is inside slic()).
The measures repeat internal/media/imageseg/quality.go's definitions:

- a ground-truth boundary pixel is a non-void pixel (id != 0) with a
  4-neighbour of another id (void included); a segmentation boundary pixel
  has a 4-neighbour in another segment; recall counts the former with one of
  the latter within Chebyshev distance 2;
- undersegmentation error (Neubert & Protzel 2012) sums, over ground-truth
  regions g and segments s that meet, min(|s & g|, |s - g|) over non-void
  pixels, divided by the non-void pixels.

    python slic_peer.py MANIFEST N_SEGMENTS COMPACTNESS
"""
import json
import os
import sys
import time

import numpy as np
from PIL import Image
from skimage.segmentation import slic


def boundary(lab):
    b = np.zeros(lab.shape, bool)
    d = lab[:, 1:] != lab[:, :-1]
    b[:, 1:] |= d
    b[:, :-1] |= d
    d = lab[1:, :] != lab[:-1, :]
    b[1:, :] |= d
    b[:-1, :] |= d
    return b


def dilate(b, r):
    h, w = b.shape
    out = np.zeros_like(b)
    for dy in range(-r, r + 1):
        for dx in range(-r, r + 1):
            ys, yd = (slice(dy, h), slice(0, h - dy)) if dy >= 0 else (slice(0, h + dy), slice(-dy, h))
            xs, xd = (slice(dx, w), slice(0, w - dx)) if dx >= 0 else (slice(0, w + dx), slice(-dx, w))
            out[yd, xd] |= b[ys, xs]
    return out


def recall(seg, gt, tol=2):
    gb = boundary(gt) & (gt != 0)
    if gb.sum() == 0:
        return 1.0
    return float((gb & dilate(boundary(seg), tol)).sum() / gb.sum())


def underseg(seg, gt):
    m = gt != 0
    s, g = seg[m].astype(np.int64), gt[m].astype(np.int64)
    if s.size == 0:
        return 0.0
    size = np.bincount(s)
    pairs, inter = np.unique(g * (s.max() + 1) + s, return_counts=True)
    segs = pairs % (s.max() + 1)
    return float(np.minimum(inter, size[segs] - inter).sum() / s.size)


def main():
    manifest, k, m = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    base = os.path.dirname(manifest)
    br = ue = n = cpu = 0.0
    photos = 0
    for line in open(manifest):
        rec = json.loads(line)
        img = np.asarray(Image.open(os.path.join(base, rec["image"])).convert("RGB"))
        gt = np.asarray(Image.open(os.path.join(base, rec["gt_mask"])))
        t0 = time.process_time()
        seg = slic(img, n_segments=k, compactness=m, start_label=0)
        cpu += time.process_time() - t0
        br += recall(seg, gt)
        ue += underseg(seg, gt)
        n += len(np.unique(seg))
        photos += 1
    print(json.dumps({"method": f"scikit-image {__import__('skimage').__version__} slic n_segments={k} compactness={m:g} (defaults: max_num_iter=10, enforce_connectivity)",
                      "photos": photos, "boundary_recall": br / photos, "undersegmentation_error": ue / photos,
                      "regions": n / photos, "cpu_ms_per_photo": 1000 * cpu / photos}))


if __name__ == "__main__":
    main()
