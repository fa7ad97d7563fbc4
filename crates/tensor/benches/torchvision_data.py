"""torchvision's equivalent of asymflow's training data pipeline, for benches/data_pipeline.rs.

Reads an ImageFolder of JPEG files and runs, per image: PIL decode, re-sampling so the largest
side is the resolution (bilinear, antialiased), RandomResizedCrop(resolution, scale=(0.25, 1)),
RandomHorizontalFlip, SimCLR colour distortion of strength 0.5 (ColorJitter(0.4, 0.4, 0.4,
0.1) with p=0.8, RandomGrayscale p=0.2), ToTensor, Normalize(ImageNet) -- the same operations
as asymflow's TrainLoader -- through a DataLoader with `--workers` worker processes.

Prints one JSON line: {"images": n, "seconds": s, "images_per_s": n / s} for one full epoch
after a warm-up pass over a few batches (worker start-up excluded).

Run with PYTHONPATH holding torch 2.11.0 and torchvision 0.26.0 (see the bench's docs).
"""

import argparse
import json
import time

import torch
from PIL import Image
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


class LargestSide:
    """Training re-sampling: the largest side to `size`, aspect ratio kept."""

    def __init__(self, size):
        self.size = size

    def __call__(self, img):
        w, h = img.size
        if max(w, h) <= self.size:
            return img
        s = self.size / max(w, h)
        return img.resize((max(1, round(w * s)), max(1, round(h * s))), Image.BILINEAR)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--resolution", type=int, default=224)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(1)

    s = 0.5
    tf = transforms.Compose([
        LargestSide(args.resolution),
        transforms.RandomResizedCrop(args.resolution, scale=(0.25, 1.0)),
        transforms.RandomHorizontalFlip(),
        transforms.RandomApply([transforms.ColorJitter(0.8 * s, 0.8 * s, 0.8 * s, 0.2 * s)], p=0.8),
        transforms.RandomGrayscale(p=0.2),
        transforms.ToTensor(),
        transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
    ])
    ds = datasets.ImageFolder(args.root, transform=tf)
    loader = DataLoader(ds, batch_size=args.batch, shuffle=True, num_workers=args.workers,
                        drop_last=True, persistent_workers=args.workers > 0)
    # Warm-up: start the workers and touch the files.
    for i, _ in enumerate(loader):
        if i >= 2:
            break
    n = 0
    t0 = time.perf_counter()
    for images, labels in loader:
        n += images.shape[0]
    dt = time.perf_counter() - t0
    print(json.dumps({"images": n, "seconds": dt, "images_per_s": n / dt}))


if __name__ == "__main__":
    main()
