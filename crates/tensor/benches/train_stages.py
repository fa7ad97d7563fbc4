"""PyTorch eager peer of benches/train_stages.rs: a researcher's training script for each of
the three training kinds, with the quickstarts' network, batch, resolution, optimiser,
one-cycle schedule and augmentation, over in-memory uint8 images of the same count and size as
the quickstart data (their content does not change the speed). Augmentation runs per batch in
the main process with torch ops: random resized crops (per image, resized with antialiasing),
flips, SimCLR colour jitter (brightness, contrast, saturation, hue, grey), ImageNet
normalisation, and for distillation coupled views at two resolutions and mixup. Prints one JSON
line: images/s of each training run (distill: images, each with its views). `--precision bf16`
runs the forward passes under CPU autocast in bfloat16 (losses in fp32), as asymflow's
`precision = "bf16"` does.

Run by the Rust benchmark (`cargo bench -p asymflow-tensor --bench train_stages`); by hand:
PYTHONPATH=~/.cache/asymflow/torch-2.11.0 python3 crates/tensor/benches/train_stages.py
"""
import argparse
import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from train_throughput import BasicBlock, distill_loss

MEAN = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
STD = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)


class Net(nn.Module):
    """ResNet-18, small stem; GeM + L2N (RAML) or average pooling (BCT); projection; L2N."""

    def __init__(self, width, embed_dim, gem):
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        layers, cin = [], width
        for stage in range(4):
            planes = width << stage
            blocks = []
            for i in range(2):
                blocks.append(BasicBlock(cin, planes, 2 if (stage > 0 and i == 0) else 1))
                cin = planes
            layers.append(nn.Sequential(*blocks))
        self.layers = nn.Sequential(*layers)
        self.gem = gem
        self.p = nn.Parameter(torch.ones(1) * 3)
        self.proj = nn.Linear(cin, embed_dim)

    def forward(self, x):
        x = self.layers(F.relu(self.bn1(self.conv1(x)), inplace=True))
        if self.gem:
            x = x.clamp(min=1e-6).pow(self.p).mean(dim=(2, 3)).pow(1.0 / self.p)
            x = F.normalize(x, dim=1)
        else:
            x = x.mean(dim=(2, 3))
        return F.normalize(self.proj(x), dim=1)


def crop_box(size, crop_min, g):
    """torchvision's RandomResizedCrop box: 10 tries, then the whole image."""
    area = size * size
    for _ in range(10):
        target = area * (crop_min + (1 - crop_min) * torch.rand(1, generator=g).item())
        ratio = math.exp(math.log(3 / 4) + (math.log(4 / 3) - math.log(3 / 4))
                         * torch.rand(1, generator=g).item())
        w = int(round(math.sqrt(target * ratio)))
        h = int(round(math.sqrt(target / ratio)))
        if 0 < w <= size and 0 < h <= size:
            top = int(torch.randint(0, size - h + 1, (1,), generator=g))
            left = int(torch.randint(0, size - w + 1, (1,), generator=g))
            return top, left, h, w
    return 0, 0, size, size


def hue_shift(x, shift):
    """Rotates the hue of RGB images `x` [N, 3, H, W] in [0, 1] by `shift` [N] turns."""
    r, g, b = x[:, 0], x[:, 1], x[:, 2]
    mx, _ = x.max(1)
    mn, _ = x.min(1)
    d = mx - mn
    safe = torch.where(d == 0, torch.ones_like(d), d)
    h = torch.where(mx == r, ((g - b) / safe) % 6,
                    torch.where(mx == g, (b - r) / safe + 2, (r - g) / safe + 4)) / 6
    h = torch.where(d == 0, torch.zeros_like(h), h)
    s = torch.where(mx == 0, torch.zeros_like(mx), d / torch.where(mx == 0, torch.ones_like(mx), mx))
    h = (h + shift.view(-1, 1, 1)) % 1.0
    k = lambda n: (n + h * 6) % 6
    f = lambda n: mx - mx * s * torch.clamp(torch.minimum(k(n), 4 - k(n)), 0, 1)
    return torch.stack([f(5), f(3), f(1)], 1)


def jitter(x, strength, g):
    """SimCLR colour distortion, per image, in [0, 1]."""
    n = x.shape[0]
    s = 0.8 * strength
    on = (torch.rand(n, generator=g) < 0.8).float().view(-1, 1, 1, 1)
    factor = lambda: 1 + (torch.rand(n, generator=g).view(-1, 1, 1, 1) * 2 - 1) * s
    grey = lambda y: (0.299 * y[:, 0] + 0.587 * y[:, 1] + 0.114 * y[:, 2]).unsqueeze(1)
    y = (x * (1 + on * (factor() - 1))).clamp(0, 1)
    mean = grey(y).mean(dim=(2, 3), keepdim=True)
    y = (mean + (1 + on * (factor() - 1)) * (y - mean)).clamp(0, 1)
    gy = grey(y)
    y = (gy + (1 + on * (factor() - 1)) * (y - gy)).clamp(0, 1)
    shift = (torch.rand(n, generator=g) * 2 - 1) * 0.2 * strength * on.view(-1)
    y = hue_shift(y, shift)
    to_grey = (torch.rand(n, generator=g) < 0.2).float().view(-1, 1, 1, 1)
    return to_grey * grey(y).expand_as(y) + (1 - to_grey) * y


def views(images, idx, resolutions, crop_min, flip, strength, g):
    """Coupled augmented views of images[idx] at each resolution: one draw per image."""
    size = images.shape[-1]
    outs = [[] for _ in resolutions]
    for i in idx.tolist():
        top, left, h, w = crop_box(size, crop_min, g)
        crop = images[i:i + 1, :, top:top + h, left:left + w].float() / 255
        if flip and torch.rand(1, generator=g).item() < 0.5:
            crop = crop.flip(-1)
        for k, r in enumerate(resolutions):
            outs[k].append(F.interpolate(crop, size=(r, r), mode="bilinear",
                                         antialias=True, align_corners=False))
    result = []
    state = g.get_state()
    for batch in outs:
        x = torch.cat(batch)
        if strength > 0:
            g.set_state(state)  # the same jitter draw for every resolution (coupled)
            x = jitter(x, strength, g)
        result.append((x - MEAN) / STD)
    return result


def one_cycle(opt, lr, steps):
    return torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=max(steps, 1))


def forward(net, x, bf16):
    """The network's embeddings, under CPU autocast in bfloat16 when `bf16`, as fp32."""
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        emb = net(x)
    return emb.float()


def run_classifier(images, labels, classes, res, batch, epochs, lr, crop_min, flip, gem, dim,
                   bf16, width=16):
    """train-teacher / train-classifier: normalised softmax, scale 16, Adam + one-cycle."""
    g = torch.Generator().manual_seed(0)
    net = Net(width, dim, gem).train()
    head = nn.Parameter(torch.randn(classes, dim) * 0.1)
    opt = torch.optim.Adam(list(net.parameters()) + [head], lr=lr)
    n = images.shape[0]
    per_epoch = n // batch
    sched = one_cycle(opt, lr, per_epoch * epochs)
    start = time.perf_counter()
    for _ in range(epochs):
        order = torch.randperm(n, generator=g)
        for b in range(per_epoch):
            idx = order[b * batch:(b + 1) * batch]
            (x,) = views(images, idx, [res], crop_min, flip, 0.0, g)
            opt.zero_grad()
            emb = forward(net, x, bf16)
            logits = 16 * emb @ F.normalize(head, dim=1).t()
            loss = F.cross_entropy(logits, labels[idx])
            loss.item()
            loss.backward()
            opt.step()
            sched.step()
    return per_epoch * batch * epochs / (time.perf_counter() - start)


def run_distill(images, per_epoch_images, big, small, batch, p, epochs, lr, dim, bf16, width=16):
    """distill: coupled views, jitter 0.5, mixup 0.2, all three losses, Adam + one-cycle."""
    g = torch.Generator().manual_seed(0)
    teacher = Net(width, dim, True).eval()
    for q in teacher.parameters():
        q.requires_grad_(False)
    student = Net(width, dim, True).train()
    student.load_state_dict(teacher.state_dict())
    opt = torch.optim.Adam(student.parameters(), lr=lr)
    n = images.shape[0]
    per_epoch = per_epoch_images // batch
    sched = one_cycle(opt, lr, per_epoch * epochs)
    beta = torch.distributions.Beta(0.2, 0.2)
    start = time.perf_counter()
    for _ in range(epochs):
        order = torch.randperm(n, generator=g)
        for b in range(per_epoch):
            idx = order[b * batch:(b + 1) * batch].repeat_interleave(p)
            tv, sv = views(images, idx, [big, small], 0.25, True, 0.5, g)
            lam = beta.sample((idx.shape[0], 1, 1, 1))
            perm = torch.randperm(idx.shape[0], generator=g)
            tv, sv = lam * tv + (1 - lam) * tv[perm], lam * sv + (1 - lam) * sv[perm]
            opt.zero_grad()
            with torch.no_grad():
                t = forward(teacher, tv, bf16)
            s = forward(student, sv, bf16)
            loss = distill_loss(s, t, p, 0.7)
            loss.item()
            loss.backward()
            opt.step()
            sched.step()
    return per_epoch * batch * epochs / (time.perf_counter() - start)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--teacher-images", type=int, default=1920)
    ap.add_argument("--student-images", type=int, default=640)
    ap.add_argument("--classifier-images", type=int, default=2000)
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    a = ap.parse_args()
    bf16 = a.precision == "bf16"
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    # The resolution-asymmetry quickstart: 48 training classes at 64 px; as many images as
    # the stage trained on per epoch.
    n = max(a.teacher_images, a.student_images)
    raml = torch.randint(0, 256, (n, 3, 64, 64), dtype=torch.uint8)
    raml_labels = torch.arange(n) % 48
    # The BCT quickstart: 500 training classes at 32 px.
    bct = torch.randint(0, 256, (a.classifier_images, 3, 32, 32), dtype=torch.uint8)
    bct_labels = torch.arange(a.classifier_images) % 500
    out = {
        "teacher": run_classifier(raml[:a.teacher_images], raml_labels, 48, 64, 64, a.epochs,
                                  2e-3, 0.25, False, True, 128, bf16),
        "distill": run_distill(raml, a.student_images, 64, 32, 32, 2, a.epochs, 1e-3, 128,
                               bf16),
        "classifier": run_classifier(bct, bct_labels, 500, 32, 32, a.epochs, 2e-3, 0.6,
                                     False, False, 64, bf16),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
