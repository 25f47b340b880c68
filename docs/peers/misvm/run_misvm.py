"""Runs misvm (Doran's MI-SVM package) on the folds `retrainer eval --folds-out` wrote.

Usage: run_misvm.py DATA FORMAT FOLDS MODEL KERNEL C GAMMA

DATA     the data set file (the one `retrainer eval --data` read)
FORMAT   musk (UCI Musk: name,conformation,features...,class) or
         mill (MILL dense: instance,bag,label,features...)
FOLDS    the --folds-out JSON: bag names in file order, then per repeat and
         fold the 0-based train and test bag indices
MODEL    MISVM or miSVM
KERNEL   linear, rbf or polynomial (misvm's names)
C        misvm's C (it divides it by the number of QP examples itself)
GAMMA    a number, "inv-d" (1 / number of features) or "default"

It prints one JSON object: mean bag accuracy over all fits (%), the standard
deviation of the repeats' means, the fits' count and the CPU seconds spent in
fit and predict (time.process_time). misvm itself is not part of this
repository: put its source on PYTHONPATH (docs/peers/misvm/compare.sh does).
"""

import json
import sys
import time

import numpy as np
import misvm


def read_bags(path, fmt):
    """Bags in file order: names, instance matrices, +1/-1 labels (a bag is
    positive when any of its instances is)."""
    names, rows, pos = [], {}, {}
    with open(path) as f:
        for line in f:
            p = line.strip().split(",")
            if len(p) < 3:
                continue
            if fmt == "musk":
                name, feats, lab = p[0], p[2:-1], p[-1]
            elif fmt == "mill":
                name, feats, lab = p[1], p[3:], p[2]
            else:
                raise SystemExit("format %r: want musk or mill" % fmt)
            if name not in rows:
                names.append(name)
                rows[name], pos[name] = [], False
            rows[name].append([float(v) for v in feats])
            pos[name] = pos[name] or float(lab) == 1
    X = [np.array(rows[n]) for n in names]
    y = np.array([1.0 if pos[n] else -1.0 for n in names])
    return names, X, y


def main():
    if len(sys.argv) != 8:
        raise SystemExit(__doc__)
    data, fmt, folds_path, model, kernel, C, gamma = sys.argv[1:]
    names, X, y = read_bags(data, fmt)
    with open(folds_path) as f:
        folds = json.load(f)
    if folds["bags"] != names:
        raise SystemExit("the bags of %s are not the folds file's, in the same order" % data)
    kw = dict(kernel=kernel, C=float(C), max_iters=50, verbose=False)
    if gamma == "inv-d":
        kw["gamma"] = 1.0 / X[0].shape[1]
    elif gamma != "default":
        kw["gamma"] = float(gamma)
    cls = {"MISVM": misvm.MISVM, "miSVM": misvm.miSVM}[model]
    accs, cpu = [], 0.0
    for fit in folds["fits"]:
        tr, te = fit["train"], fit["test"]
        # z-scores with the fold's training instances, as ours does by
        # default (scale=zscore); a constant feature is left centred.
        inst = np.vstack([X[i] for i in tr])
        mu, sd = inst.mean(axis=0), inst.std(axis=0)
        sd[sd == 0] = 1
        t0 = time.process_time()
        clf = cls(**kw)
        clf.fit([(X[i] - mu) / sd for i in tr], y[tr])
        pred = clf.predict([(X[i] - mu) / sd for i in te])
        cpu += time.process_time() - t0
        accs.append(float(np.mean((np.asarray(pred) > 0) == (y[te] > 0))))
    reps = {}
    for fit, a in zip(folds["fits"], accs):
        reps.setdefault(fit["repeat"], []).append(a)
    means = [np.mean(v) for v in reps.values()]
    print(json.dumps({"model": model, "kernel": kernel, "C": float(C), "gamma": kw.get("gamma", "default"),
                      "fits": len(accs), "accuracy": 100 * float(np.mean(accs)),
                      "repeat_std": 100 * float(np.std(means)), "fit_cpu_seconds": cpu}))


if __name__ == "__main__":
    main()
