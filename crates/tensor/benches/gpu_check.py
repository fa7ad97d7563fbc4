"""PyTorch eager peer of benches/gpu_check.rs: the same ResNet-50 (ImageNet stem, GeM, L2N,
projection, L2N), normalised-softmax head, AdamW, batch, resolution and precision (bf16:
torch.autocast over the forward pass, the loss in fp32), timed the same way on cuda:0.
Prints one JSON line: `rates`, the images/s of each case, fp32 then bf16, and `peaks`, the
peak bytes PyTorch's CUDA allocator held during each (torch.cuda.max_memory_allocated, reset
before each case), what asymflow's memory estimate (calibrated on PyTorch's CPU peaks) is
compared with.

Run by the Rust benchmark (`cargo bench -p asymflow-tensor --bench gpu_check`); by hand:
PYTHONPATH=~/.cache/asymflow/torch-2.11.0 python3 crates/tensor/benches/gpu_check.py \
    --case teacher,224,64 --case distill,448:224,16:2
"""
import argparse
import contextlib
import json
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Bottleneck(nn.Module):
    def __init__(self, cin, planes, stride):
        super().__init__()
        out = planes * 4
        self.conv1 = nn.Conv2d(cin, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, out, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out)
        self.downsample = None
        if stride != 1 or cin != out:
            self.downsample = nn.Sequential(
                nn.Conv2d(cin, out, 1, stride, bias=False), nn.BatchNorm2d(out))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)), inplace=True)
        y = F.relu(self.bn2(self.conv2(y)), inplace=True)
        y = self.bn3(self.conv3(y))
        s = x if self.downsample is None else self.downsample(x)
        return F.relu(y + s, inplace=True)


class Net(nn.Module):
    """ResNet-50, ImageNet stem (7x7/2 + max-pool), GeM, L2N, projection, L2N."""

    def __init__(self, embed_dim, width=64):
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        layers, cin = [], width
        for stage, blocks in enumerate([3, 4, 6, 3]):
            planes = width << stage
            seq = []
            for i in range(blocks):
                seq.append(Bottleneck(cin, planes, 2 if (stage > 0 and i == 0) else 1))
                cin = planes * 4
            layers.append(nn.Sequential(*seq))
        self.layers = nn.Sequential(*layers)
        self.p = nn.Parameter(torch.ones(1) * 3)
        self.proj = nn.Linear(cin, embed_dim)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x)), inplace=True), 3, 2, 1)
        x = self.layers(x)
        x = x.clamp(min=1e-6).pow(self.p).mean(dim=(2, 3)).pow(1.0 / self.p)
        x = F.normalize(x, dim=1)
        return F.normalize(self.proj(x), dim=1)


def distill_loss(s, t, p):
    s, t = s.view(-1, p, s.shape[1]), t.view(-1, p, t.shape[1])
    eps = 1e-6
    l_abs = ((1 + eps - (s * t).sum(-1)) ** 2).mean(-1).sum()
    tt = t @ t.transpose(1, 2)
    off = 1 - torch.eye(p, device=s.device)
    rel_ts = (((s @ t.transpose(1, 2) - tt + eps) ** 2).sum(0) * off).sum() / (p * (p - 1))
    rel_ss = (((s @ s.transpose(1, 2) - tt + eps) ** 2).sum(0) * off).sum() / (p * (p - 1))
    return l_abs + 0.7 * rel_ts + 0.7 * rel_ss


def timed(step, warmup, steps):
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    return time.perf_counter() - start


def autocast(bf16):
    if bf16:
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def teacher(res, batch, bf16, args):
    torch.manual_seed(0)
    net = Net(args.embed_dim).cuda()
    head = nn.Parameter(torch.randn(args.classes, args.embed_dim, device="cuda"))
    opt = torch.optim.AdamW(list(net.parameters()) + [head], lr=1e-4, weight_decay=1e-4)
    x = torch.randn(batch, 3, res, res, device="cuda")
    y = torch.randint(args.classes, (batch,), device="cuda")

    def step():
        opt.zero_grad(set_to_none=False)
        with autocast(bf16):
            emb = net(x)
        logits = F.normalize(emb.float(), dim=1) @ F.normalize(head, dim=1).t() * 30.0
        loss = F.cross_entropy(logits, y)
        loss.item()
        loss.backward()
        opt.step()

    return batch * args.steps / timed(step, args.warmup, args.steps)


def distill(big, small, images, views, bf16, args):
    torch.manual_seed(0)
    frozen = Net(args.embed_dim).cuda().eval()
    for p in frozen.parameters():
        p.requires_grad_(False)
    student = Net(args.embed_dim).cuda()
    student.load_state_dict(frozen.state_dict())
    opt = torch.optim.AdamW(student.parameters(), lr=1e-4, weight_decay=1e-4)
    n = images * views
    tv = torch.randn(n, 3, big, big, device="cuda")
    sv = torch.randn(n, 3, small, small, device="cuda")

    def step():
        opt.zero_grad(set_to_none=False)
        with torch.no_grad(), autocast(bf16):
            t = frozen(tv)
        with autocast(bf16):
            s = student(sv)
        loss = distill_loss(s.float(), t.float(), views)
        loss.item()
        loss.backward()
        opt.step()

    return n * args.steps / timed(step, args.warmup, args.steps)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", action="append", required=True)
    ap.add_argument("--embed-dim", type=int, default=512)
    ap.add_argument("--classes", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=10)
    args = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    rates, peaks = [], []
    for case in args.case:
        kind, a, b = case.split(",")
        for bf16 in (False, True):
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
            if kind == "teacher":
                rates.append(teacher(int(a), int(b), bf16, args))
            else:
                big, small = map(int, a.split(":"))
                images, views = map(int, b.split(":"))
                rates.append(distill(big, small, images, views, bf16, args))
            peaks.append(torch.cuda.max_memory_allocated())
    print(json.dumps({"rates": rates, "peaks": peaks}))


if __name__ == "__main__":
    main()
