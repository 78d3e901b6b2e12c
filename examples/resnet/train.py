"""The built-in example's entry point: an ELU ResNet on CIFAR-shaped channels (see model/README.md).

SageMaker's script mode runs it as ``python train.py --name value ...`` in this
directory, as it runs any training script.
"""

from model.train import process_main

if __name__ == "__main__":
    process_main()
