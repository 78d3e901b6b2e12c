"""Generated data for the MLP example: Gaussian class clusters, hard enough that a careless run misses 90%.

    python examples/mlp/make_data.py --out data/mlp        # data/mlp/train/{x,y}.npy
"""

import argparse
import os

import numpy as np


def make_blobs(samples=2000, features=20, classes=5, separation=1.6, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(classes, features)) * separation
    labels = rng.integers(0, classes, samples)
    points = centers[labels] + rng.normal(size=(samples, features)) * 2.0
    return points.astype(np.float32), labels.astype(np.int64)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="data/mlp")
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    x, y = make_blobs(args.samples, seed=args.seed)
    directory = os.path.join(args.out, "train")
    os.makedirs(directory, exist_ok=True)
    np.save(os.path.join(directory, "x.npy"), x)
    np.save(os.path.join(directory, "y.npy"), y)
    print(f"{len(y)} samples of {x.shape[1]} features in {directory}")


if __name__ == "__main__":
    main()
