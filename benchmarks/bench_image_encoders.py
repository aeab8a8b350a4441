"""Forward+backward time of the image encoders on one batch (docs/images.md).

ImageEncoder(ConvBackbone) and ImageEncoder(ResNet18Backbone), 10 latents, a batch of 256 RGB
images at 64×64, one Adam step each; median of the timed repeats after one warm-up, and the ratio
measured in the same run. Run: python benchmarks/bench_image_encoders.py [--threads 1]
"""

import argparse
import statistics
import time

import torch

from unmix.models import ConvBackbone, ImageEncoder, ResNet18Backbone


def step_time(model: torch.nn.Module, x: torch.Tensor, repeats: int) -> float:
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    times = []
    for i in range(repeats + 1):
        t0 = time.perf_counter()
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if i:
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    x = torch.rand(args.batch, 3, 64, 64)
    conv = step_time(ImageEncoder(ConvBackbone(image_size=64), 10), x, args.repeats)
    resnet = step_time(ImageEncoder(ResNet18Backbone(), 10), x, args.repeats)
    print(
        f"batch {args.batch} at 64×64, {args.threads} thread(s): conv {conv:.3f} s, "
        f"ResNet-18 {resnet:.3f} s per forward+backward+Adam step; ratio {resnet / conv:.1f}×"
    )


if __name__ == "__main__":
    main()
