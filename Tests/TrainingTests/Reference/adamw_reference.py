#!/usr/bin/env python3
"""Reference values for AdamWTests: torch.optim.AdamW's update (foreach=False, amsgrad=False, maximize=False),
written out with numpy in float32 in PyTorch's operation order, including clip_grad_norm_ before each step.

    param *= 1 - lr * weight_decay
    exp_avg.lerp_(grad, 1 - beta1)                      # exp_avg + (1 - beta1) * (grad - exp_avg)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    denom = exp_avg_sq.sqrt() / sqrt(1 - beta2**t) + eps
    param.addcdiv_(exp_avg, denom, value=-lr / (1 - beta1**t))

Run it to print the values the Swift test embeds (the gradients are a fixed function of the step, so no
random numbers are needed).
"""
import math
import numpy as np

f32 = np.float32
beta1, beta2, eps, wd, max_norm = 0.9, 0.999, 1e-8, 0.01, 1.0
param = np.array([0.5, -1.25, 2.0, 0.0, 3.5], dtype=f32)
m = np.zeros_like(param)
v = np.zeros_like(param)


def gradient(t):
    # A deterministic gradient whose norm exceeds max_norm on some steps, so clipping is exercised.
    return np.array([0.3 * t, -0.7, 0.05 * (t - 2), 1.5 / t, -0.2 * t], dtype=f32)


def lr_at(t):
    # Cosine with 2 warm-up steps over 6 steps, floor 0.1 x peak, as LearningRateSchedule.cosine computes it.
    peak, warmup, total, floor = 1e-2, 2, 6, 0.1
    s = t - 1
    if s < warmup:
        return peak * (s + 1) / warmup
    progress = min((s - warmup) / (total - warmup - 1), 1.0)
    low = peak * floor
    return low + (peak - low) * 0.5 * (1 + math.cos(math.pi * progress))


for t in range(1, 7):
    g = gradient(t)
    norm = math.sqrt(sum(float(x) * float(x) for x in g))
    coef = max_norm / (norm + 1e-6)
    if coef < 1:
        g = g * f32(coef)
    lr = lr_at(t)
    param = param * f32(1 - lr * wd)
    m = m + f32(1 - beta1) * (g - m)
    v = v * f32(beta2) + f32(1 - beta2) * (g * g)
    denom = np.sqrt(v) / f32(math.sqrt(1 - beta2 ** t)) + f32(eps)
    param = param + f32(-lr / (1 - beta1 ** t)) * (m / denom)
    print(f"step {t} lr {lr!r} norm {norm!r}")
print("param", [float(x) for x in param])
print("m", [float(x) for x in m])
print("v", [float(x) for x in v])
