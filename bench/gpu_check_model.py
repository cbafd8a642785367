"""The models of the GPU check (bench/gpu_check.py): a tiny ResNet-18-like network and a matmul
size, and the numerics comparison against a reference. torch and numpy are imported by the
functions."""
from __future__ import annotations

#: tiny ResNet-18: BasicBlocks [2, 2, 2, 2] with these widths, on a 1x3xSxS input
WIDTHS = (16, 32, 64, 128)
IMAGE = 64
MATMUL_N = 1024


def tiny_resnet(seed: int = 0):
    """ResNet-18 topology (stem, 4 stages x 2 BasicBlocks, avgpool, fc) with small widths, eval
    mode, random BatchNorm statistics (so BN is not the identity)."""
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            y = torch.relu(self.bn1(self.conv1(x)))
            y = self.bn2(self.conv2(y))
            return torch.relu(y + (x if self.down is None else self.down(x)))

    class TinyResNet(nn.Module):
        def __init__(self):
            super().__init__()
            w = WIDTHS
            self.stem = nn.Sequential(nn.Conv2d(3, w[0], 3, 1, 1, bias=False), nn.BatchNorm2d(w[0]), nn.ReLU())
            blocks, cin = [], w[0]
            for i, cout in enumerate(w):
                blocks += [Block(cin, cout, 1 if i == 0 else 2), Block(cout, cout, 1)]
                cin = cout
            self.blocks = nn.Sequential(*blocks)
            self.fc = nn.Linear(w[-1], 10)

        def forward(self, x):
            y = self.blocks(self.stem(x))
            return self.fc(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(y, 1), 1))

    torch.manual_seed(seed)
    model = TinyResNet()
    generator = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.copy_(torch.randn(m.num_features, generator=generator) * 0.1)
                m.running_var.copy_(torch.rand(m.num_features, generator=generator) + 0.5)
                m.weight.copy_(torch.rand(m.num_features, generator=generator) + 0.5)
                m.bias.copy_(torch.randn(m.num_features, generator=generator) * 0.1)
    return model.eval()


def load_weights(model, path: str):
    import numpy as np
    import torch

    with np.load(path) as arrays:
        model.load_state_dict({k: torch.from_numpy(arrays[k]) for k in arrays.files})
    return model.eval()


def compare(out, ref) -> dict:
    import numpy as np

    out, ref = np.asarray(out, dtype="float64"), np.asarray(ref, dtype="float64")
    if out.shape != ref.shape:
        return {"match": False, "shape": list(out.shape), "ref_shape": list(ref.shape)}
    abs_err = float(np.max(np.abs(out - ref))) if out.size else 0.0
    scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    rel = abs_err / max(scale, 1e-12)
    return {"match": bool(rel <= 2e-3), "max_abs_err": abs_err, "max_rel_err": rel, "ref_max_abs": scale}
