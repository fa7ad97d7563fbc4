"""Measures the constants of asymflow::exec::memory (TRAIN_BYTES_PER_VALUE,
NOGRAD_BYTES_PER_LARGEST): the peak resident memory of one AdamW step of the project's
ResNets (written out again here as nn/resnet.rs builds them: channels-last, conv + BatchNorm,
in-place ReLUs, GeM, a linear projection) on this CPU, and its growth with the batch, in
bytes per image; divide by the values the convolutions output per image
(asymflow::exec::memory::network, at width 16 and 128 px) for the constants.

glibc serves every allocation of 64 KiB or more from its own mapping and returns it when
freed (mallopt), so the resident set follows what libtorch holds; the kernel's high-water
mark, reset before the step (/proc/self/clear_refs), gives the step's peak. Linux only.

    PYTHONPATH=$(dirname $LIBTORCH) python3 crates/tensor/tests/memory_calibrate.py

(after `. scripts/libtorch.sh`). memory_estimate.rs checks the estimate built from these
against the Rust networks themselves.
"""
import ctypes, torch, torch.nn as nn, torch.nn.functional as F
libc = ctypes.CDLL("libc.so.6")
libc.mallopt(-3, 64 << 10); libc.mallopt(-1, 128 << 10); libc.mallopt(-8, 1)
torch.set_num_threads(1)
def st(f):
    for l in open('/proc/self/status'):
        if l.startswith(f): return int(l.split()[1]) * 1024
def cb(cin, cout, k, s): return nn.Sequential(nn.Conv2d(cin, cout, k, s, k // 2, bias=False), nn.BatchNorm2d(cout))
class Block(nn.Module):
    def __init__(s, inp, planes, stride, bott):
        super().__init__(); e = 4 if bott else 1
        s.convs = nn.ModuleList([cb(inp, planes, 1, 1), cb(planes, planes, 3, stride), cb(planes, planes * 4, 1, 1)] if bott else [cb(inp, planes, 3, stride), cb(planes, planes, 3, 1)])
        s.ds = cb(inp, planes * e, 1, stride) if (stride != 1 or inp != planes * e) else None
    def forward(s, x):
        y = x
        for i, c in enumerate(s.convs):
            y = c(y)
            if i != len(s.convs) - 1: y = y.relu_()
        return (y + (s.ds(x) if s.ds is not None else x)).relu_()
ARCH = {"resnet18": ([2,2,2,2], False), "resnet34": ([3,4,6,3], False), "resnet50": ([3,4,6,3], True), "resnet101": ([3,4,23,3], True), "resnet152": ([3,8,36,3], True)}
class Net(nn.Module):
    def __init__(s, arch, w):
        super().__init__(); counts, bott = ARCH[arch]; e = 4 if bott else 1
        s.stem = cb(3, w, 7, 2); blocks = []; inp = w
        for st_, n in enumerate(counts):
            for i in range(n):
                blocks.append(Block(inp, w << st_, 2 if (i == 0 and st_ > 0) else 1, bott)); inp = (w << st_) * e
        s.blocks = nn.Sequential(*blocks); s.p = nn.Parameter(torch.tensor(3.0)); s.proj = nn.Linear(inp, 64)
    def forward(s, x):
        x = x.contiguous(memory_format=torch.channels_last)
        y = F.max_pool2d(s.stem(x).relu_(), 3, 2, 1); y = s.blocks(y)
        y = y.clamp(min=1e-6).pow(s.p).mean((2, 3)).pow(1 / s.p)
        return F.normalize(s.proj(y), dim=1)
def peak(arch, w, res, n, bf16, train=True):
    torch.manual_seed(0); net = Net(arch, w); opt = torch.optim.AdamW(net.parameters(), 1e-4)
    x = torch.randn(n, 3, res, res)
    def step():
        opt.zero_grad()
        if train:
            with torch.autocast("cpu", torch.bfloat16, enabled=bf16): e = net(x)
            e.float().pow(2).sum().backward(); opt.step()
        else:
            net.eval()
            with torch.no_grad(), torch.autocast("cpu", torch.bfloat16, enabled=bf16): net(x)
    step(); b = st("VmRSS:"); open('/proc/self/clear_refs', 'w').write('5'); step()
    return st("VmHWM:") - b
import sys
print("arch fp32 bf16: peak growth per image, 8 -> 16 images, width 16, 128 px")
for arch in ARCH:
    out = []
    for bf16 in (False, True):
        out.append((peak(arch, 16, 128, 16, bf16) - peak(arch, 16, 128, 8, bf16)) / 8)
    print(arch, *[f"{o:.0f}" for o in out], flush=True)
for bf16 in (False, True):
    print("nograd resnet50", bf16, (peak("resnet50", 16, 128, 32, bf16, False) - peak("resnet50", 16, 128, 16, bf16, False)) / 16, flush=True)
