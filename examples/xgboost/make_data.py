"""Channels for the XGBoost example from a data set that ships with scikit-learn (no download): breast cancer
(binary, 569 samples, 30 features) or digits (10 classes, 1,797 samples, 64 features), split 70/30 with the
classes' proportions kept, written as the XGBoost container's text/csv (label first, no header).

    python examples/xgboost/make_data.py --out data/xgboost             # data/xgboost/{train,validation}/data.csv
    python examples/xgboost/make_data.py --dataset digits --out data/digits
"""

import argparse
import os

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.model_selection import train_test_split

DATASETS = {"breast_cancer": load_breast_cancer, "digits": load_digits}


def write_channels(out, dataset="breast_cancer", validation_fraction=0.3, seed=0):
    features, labels = DATASETS[dataset](return_X_y=True)
    x_train, x_val, y_train, y_val = train_test_split(
        features, labels, test_size=validation_fraction, random_state=seed, stratify=labels
    )
    for channel, x, y in (("train", x_train, y_train), ("validation", x_val, y_val)):
        directory = os.path.join(out, channel)
        os.makedirs(directory, exist_ok=True)
        np.savetxt(os.path.join(directory, "data.csv"), np.column_stack([y, x]), delimiter=",", fmt="%.10g")
    return len(y_train), len(y_val)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="data/xgboost")
    parser.add_argument("--dataset", choices=sorted(DATASETS), default="breast_cancer")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    train, validation = write_channels(args.out, args.dataset, seed=args.seed)
    print(f"{args.dataset}: {train} training and {validation} validation samples in {args.out}/{{train,validation}}")


if __name__ == "__main__":
    main()
