"""A student distilled in PyTorch, run by asymflow as a `command` stage (see pipeline.toml).

The student is a small residual MLP on the teacher's embeddings of low-resolution images,
trained to reproduce the teacher's own full-resolution embeddings of the same training images
(the teacher is frozen; only its embeddings are read). It then embeds the test queries, and
asymflow's native `evaluate` scores them against the teacher's full-resolution database.
"""
import argparse
import json
import struct

import torch

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
          "I64": torch.int64, "I32": torch.int32, "U8": torch.uint8}


def load(path):
    """A safetensors file as {name: tensor}: the `safetensors` package, or its format read here."""
    try:
        from safetensors.torch import load_file
        return load_file(path)
    except ImportError:
        pass
    with open(path, "rb") as f:
        header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
        data = f.read()
    return {name: torch.frombuffer(bytearray(data[a:b]), dtype=DTYPES[t["dtype"]]).reshape(t["shape"])
            for name, t in header.items() if name != "__metadata__"
            for a, b in [t["data_offsets"]]}


def save(tensors, path):
    try:
        from safetensors.torch import save_file
        return save_file(tensors, path)
    except ImportError:
        pass
    names = {v: k for k, v in DTYPES.items()}
    header, blobs, offset = {}, [], 0
    for name, t in sorted(tensors.items()):
        raw = bytes(t.contiguous().flatten().view(torch.uint8).tolist())
        header[name] = {"dtype": names[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


p = argparse.ArgumentParser()
for flag in ["--low", "--high", "--queries", "--embeddings", "--loss"]:
    p.add_argument(flag, required=True)
p.add_argument("--seed", type=int, required=True)
p.add_argument("--epochs", type=int, required=True)
p.add_argument("--lr", type=float, required=True)
args = p.parse_args()

torch.manual_seed(args.seed)
torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)
low, high = load(args.low), load(args.high)
assert torch.equal(low["labels"], high["labels"]), "the two teacher embeddings list other images"
x, y = low["embeddings"], high["embeddings"]
dim = x.shape[1]
student = torch.nn.Sequential(torch.nn.Linear(dim, 4 * dim), torch.nn.ReLU(), torch.nn.Linear(4 * dim, dim))
opt = torch.optim.Adam(student.parameters(), lr=args.lr)
embed = lambda e: torch.nn.functional.normalize(e + student(e), dim=1)
curve = []
for epoch in range(1, args.epochs + 1):
    order, total = torch.randperm(len(x)), 0.0
    for batch in order.split(16):
        loss = (1 - (embed(x[batch]) * y[batch]).sum(1)).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item() * len(batch)
    curve.append({"epoch": epoch, "loss": total / len(x)})
    print(f"epoch {epoch}: cosine loss {total / len(x):.4f}", flush=True)

queries = load(args.queries)
with torch.no_grad():
    queries["embeddings"] = embed(queries["embeddings"]).contiguous()
save(queries, args.embeddings)
with open(args.loss, "w") as f:
    json.dump({"epochs": curve}, f)
