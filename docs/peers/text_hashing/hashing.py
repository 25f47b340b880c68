"""scikit-learn's HashingVectorizer on the text development set's documents,
timed on one core: documents per second for the whole documents (its usual
use: one vector per document), for paragraphs (split at blank lines, as ours
are), and for Andrews-style passages (50 tokens every 25, from its own token
pattern) as ours computes them. The splitting is timed with the vectorizing,
as our segmentation is timed with our features.

Usage: hashing.py DOCS.jsonl [ROUNDS]   prints one JSON object per line.
Run by compare.sh, which installs scikit-learn into a virtual environment.
"""

import json
import re
import sys
import time

import sklearn
from sklearn.feature_extraction.text import HashingVectorizer


def windows(doc, token=re.compile(r"(?u)\b\w\w+\b"), window=50, stride=25):
    """Andrews's windows over the vectorizer's own tokens, as text spans."""
    spans = [m.span() for m in token.finditer(doc)]
    out = []
    i = 0
    while spans:
        j = min(i + window, len(spans)) - 1
        out.append(doc[spans[i][0]:spans[j][1]])
        if j == len(spans) - 1:
            break
        i += stride
    return out


def paragraphs(doc):
    """The document's paragraphs: runs of lines that are not blank."""
    out, cur = [], []
    for line in doc.split("\n"):
        if line.strip():
            cur.append(line)
        elif cur:
            out.append("\n".join(cur))
            cur = []
    if cur:
        out.append("\n".join(cur))
    return out


def main():
    path = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    with open(path, encoding="utf-8") as f:
        docs = [json.loads(line)["text"] for line in f if line.strip()]
    # n_features as ours (text.DefaultDim, 2^17), signed, raw counts
    # (norm=None) and with its default L2 norm; lowercase, default token
    # pattern.
    n = 2**17
    for name, vec in [
        ("documents", HashingVectorizer(n_features=n, alternate_sign=True, norm=None)),
        ("documents_l2", HashingVectorizer(n_features=n, alternate_sign=True)),
        ("paragraphs", HashingVectorizer(n_features=n, alternate_sign=True, norm=None)),
        ("windows", HashingVectorizer(n_features=n, alternate_sign=True, norm=None)),
        ("windows_english_stop", HashingVectorizer(n_features=n, alternate_sign=True, norm=None, stop_words="english")),
    ]:
        best = None
        for _ in range(rounds):
            t0 = time.process_time()
            if name.startswith("windows"):
                passages = [p for d in docs for p in windows(d)]
                x = vec.transform(passages)
            elif name == "paragraphs":
                passages = [p for d in docs for p in paragraphs(d)]
                x = vec.transform(passages)
            else:
                x = vec.transform(docs)
            dt = time.process_time() - t0
            best = dt if best is None else min(best, dt)
        print(json.dumps({"peer": "sklearn.HashingVectorizer", "version": sklearn.__version__, "case": name,
                          "docs": len(docs), "rows": x.shape[0], "nnz": int(x.nnz),
                          "cpu_seconds_min": round(best, 4), "docs_per_cpu_second": round(len(docs) / best, 1)}))


if __name__ == "__main__":
    main()
