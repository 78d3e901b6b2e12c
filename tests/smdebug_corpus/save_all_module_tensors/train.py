"""awslabs/sagemaker-debugger's examples/pytorch/scripts/simple.py pattern: save_all and module inputs/outputs."""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

from smdebug.pytorch import Hook, SaveConfig


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.add_module("fc1", nn.Linear(20, 50))
        self.add_module("relu1", nn.ReLU())
        self.add_module("fc2", nn.Linear(50, 4))

    def forward(self, x):
        return F.log_softmax(self.fc2(self.relu1(self.fc1(x))), dim=1)


def create_hook(output_dir, module, hook_type, save_steps):
    if hook_type == "saveall":
        return Hook(out_dir=output_dir, save_config=SaveConfig(save_steps=save_steps), save_all=True)
    # module-input-output: the inputs and output of one module, named <module_name>_input_<i> / _output_<i>
    hook = Hook(
        out_dir=output_dir,
        save_config=SaveConfig(save_steps=save_steps),
        include_collections=["weights", "gradients", "biases", "l_mod"],
    )
    hook.get_collection("l_mod").add_module_tensors(module, inputs=True, outputs=True)
    return hook


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--smdebug_path", type=str, required=True)
    parser.add_argument("--hook-type", choices=["saveall", "module-input-output"], default="saveall")
    parser.add_argument("--steps", type=int, default=12)
    args = parser.parse_args()
    torch.manual_seed(3)
    model = Net()
    hook = create_hook(args.smdebug_path, model.fc2, args.hook_type, save_steps=[2, 5])
    hook.register_hook(model)
    optimizer = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    model.train()
    for _ in range(args.steps):
        data, target = torch.rand(8, 20), torch.randint(0, 4, (8,))
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
