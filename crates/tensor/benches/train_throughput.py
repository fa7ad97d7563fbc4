"""PyTorch eager peer of benches/train_throughput.rs: the same network, batch, resolution and
thread count, timed the same way. Prints one JSON line: images per second of a teacher step and
of a distillation step.

Run by the Rust benchmark (`cargo bench --bench train_throughput`); by hand:
PYTHONPATH=~/.cache/asymflow/torch-2.11.0 python3 benches/train_throughput.py --threads 2
"""
import argparse
import json
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class BasicBlock(nn.Module):
    def __init__(self, cin, planes, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or cin != planes:
            self.downsample = nn.Sequential(
                nn.Conv2d(cin, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)), inplace=True)
        y = self.bn2(self.conv2(y))
        s = x if self.downsample is None else self.downsample(x)
        return F.relu(y + s, inplace=True)


class Net(nn.Module):
    """ResNet-18, small stem (3x3, stride 1, no max-pool), GeM, projection, L2N."""

    def __init__(self, width, embed_dim):
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
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.p = nn.Parameter(torch.ones(1) * 3)
        self.proj = nn.Linear(cin, embed_dim)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)), inplace=True)
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = x.clamp(min=1e-6).pow(self.p).mean(dim=(2, 3)).pow(1.0 / self.p)
        x = x / (x.norm(dim=1, keepdim=True) + 1e-6)
        x = self.proj(x)
        return x / (x.norm(dim=1, keepdim=True) + 1e-6)


def l_abs(s, t, p):
    d = 1 - (s.view(-1, p, s.shape[1]) * t.view(-1, p, t.shape[1])).sum(-1)
    return (d + 1e-6).pow(2).mean(-1).sum()


def rel(a, b, p):
    d = (a - b + 1e-6).pow(2).sum(0)
    return d.fill_diagonal_(0).sum() / (p * (p - 1))


def distill_loss(s, t, p, lam):
    sv, tv = s.view(-1, p, s.shape[1]), t.view(-1, p, t.shape[1])
    tt = torch.bmm(tv, tv.transpose(1, 2))
    return (l_abs(s, t, p) + lam * rel(torch.bmm(sv, tv.transpose(1, 2)), tt, p)
            + lam * rel(torch.bmm(sv, sv.transpose(1, 2)), tt, p))


def timed(step, warmup, steps):
    for _ in range(warmup):
        step()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return time.perf_counter() - start


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--width", type=int, default=16)
    ap.add_argument("--embed-dim", type=int, default=128)
    ap.add_argument("--classes", type=int, default=48)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--res", type=int, default=64)
    ap.add_argument("--student-res", type=int, default=32)
    ap.add_argument("--augmentations", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=15)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)

    # Teacher step: normalised softmax (scale 16) over the embedding, AdamW.
    net = Net(a.width, a.embed_dim)
    head = nn.Parameter(torch.randn(a.classes, a.embed_dim) * 0.1)
    opt = torch.optim.AdamW(list(net.parameters()) + [head], lr=1e-3, weight_decay=1e-4)
    x = torch.randn(a.batch, 3, a.res, a.res)
    y = torch.randint(0, a.classes, (a.batch,))
    net.train()

    def teacher_step():
        opt.zero_grad()
        e = net(x)
        logits = 16 * e @ F.normalize(head, dim=1).t()
        F.cross_entropy(logits, y).backward()
        opt.step()

    t_teacher = timed(teacher_step, a.warmup, a.steps)

    # Distillation step: frozen teacher at res, student at student_res, all three terms.
    teacher = Net(a.width, a.embed_dim).eval()
    for p in teacher.parameters():
        p.requires_grad_(False)
    student = Net(a.width, a.embed_dim).train()
    sopt = torch.optim.AdamW(student.parameters(), lr=1e-3, weight_decay=1e-4)
    tx = torch.randn(a.batch, 3, a.res, a.res)
    sx = torch.randn(a.batch, 3, a.student_res, a.student_res)

    def distill_step():
        sopt.zero_grad()
        with torch.no_grad():
            t = teacher(tx)
        s = student(sx)
        distill_loss(s, t, a.augmentations, 0.7).backward()
        sopt.step()

    t_distill = timed(distill_step, a.warmup, a.steps)
    print(json.dumps({
        "teacher_images_per_s": a.batch * a.steps / t_teacher,
        "distill_images_per_s": a.batch * a.steps / t_distill,
    }))


if __name__ == "__main__":
    main()
