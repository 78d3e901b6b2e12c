"""Data for the MLP example: generated class clusters or scikit-learn's bundled 8x8 digits (no download), clean
or with the faults real data sets have (a rare class, NaN features, labels outside the classes, unscaled values).

    python examples/mlp/make_data.py --out data/mlp                       # data/mlp/train/{x,y}.npy
    python examples/mlp/make_data.py --out data/digits --dataset digits   # 1,797 real 8x8 images (N, 1, 8, 8), 10 classes
    python examples/mlp/make_data.py --out data/rare --imbalance 0.02     # class 0 kept at 2% of its samples

Each channel directory holds ``x.npy`` (N, ...) float32 features and ``y.npy`` (N,) int64 labels.
"""

import argparse
import os

import numpy as np

DATASETS = ("blobs", "digits")


def make_blobs(samples=2000, features=20, classes=5, separation=1.6, seed=0):
    """Gaussian class clusters, hard enough that a careless run misses 90% held-out accuracy."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(classes, features)) * separation
    labels = rng.integers(0, classes, samples)
    points = centers[labels] + rng.normal(size=(samples, features)) * 2.0
    return points.astype(np.float32), labels.astype(np.int64)


def load_digits(seed=0):
    """scikit-learn's bundled handwritten digits: (1797, 1, 8, 8) images (one channel, pixel values 0..16), shuffled."""
    from sklearn.datasets import load_digits as bundled

    digits = bundled()
    order = np.random.default_rng(seed).permutation(len(digits.target))
    return digits.images[order][:, None].astype(np.float32), digits.target[order].astype(np.int64)


def make_dataset(dataset="blobs", samples=2000, seed=0, imbalance=None, nan_fraction=0.0, bad_labels=0, scale=1.0,
                 label_noise=0.0):
    """The data set with the requested faults applied; returns (x, y)."""
    if dataset not in DATASETS:
        raise ValueError(f"dataset must be one of {', '.join(DATASETS)}; got {dataset!r}")
    x, y = make_blobs(samples, seed=seed) if dataset == "blobs" else load_digits(seed)
    rng = np.random.default_rng(seed + 1)
    if imbalance is not None:
        # Keep only this fraction of class 0's samples: a rare class the loss can ignore.
        rare = np.flatnonzero(y == 0)
        drop = rare[int(len(rare) * imbalance):]
        keep = np.setdiff1d(np.arange(len(y)), drop)
        x, y = x[keep], y[keep]
    if nan_fraction:
        rows = rng.choice(len(y), max(1, int(len(y) * nan_fraction)), replace=False)
        x = x.copy()
        x[rows, ...] = np.nan
    if label_noise:
        # Wrong labels a model can only memorise: what it learns of them does not carry to held-out data.
        rows = rng.choice(len(y), int(len(y) * label_noise), replace=False)
        y = y.copy()
        y[rows] = rng.integers(0, int(y.max()) + 1, len(rows))
    if bad_labels:
        rows = rng.choice(len(y), bad_labels, replace=False)
        y = y.copy()
        y[rows] = int(y.max()) + 10  # a class the rest of the data never names
    return (x * scale).astype(np.float32), y.astype(np.int64)


def write_channel(directory, x, y):
    os.makedirs(directory, exist_ok=True)
    np.save(os.path.join(directory, "x.npy"), x)
    np.save(os.path.join(directory, "y.npy"), y)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="data/mlp")
    parser.add_argument("--dataset", choices=DATASETS, default="blobs")
    parser.add_argument("--samples", type=int, default=2000, help="blobs only")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--imbalance", type=float, help="keep this fraction of class 0")
    parser.add_argument("--nan-fraction", type=float, default=0.0, help="rows whose features are all NaN")
    parser.add_argument("--bad-labels", type=int, default=0, help="labels set outside the classes")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply the features (unscaled inputs)")
    parser.add_argument("--label-noise", type=float, default=0.0, help="fraction of labels drawn at random")
    args = parser.parse_args()
    x, y = make_dataset(args.dataset, args.samples, args.seed, args.imbalance, args.nan_fraction, args.bad_labels,
                        args.scale, args.label_noise)
    directory = os.path.join(args.out, "train")
    write_channel(directory, x, y)
    print(f"{len(y)} samples of shape {x.shape[1:]} in {directory}")


if __name__ == "__main__":
    main()
