"""The mlx-lm side of scripts/bench/train: LoRA training with mlx-lm's own trainer on mlx's Linux CPU backend, one
configuration per process.

Run by scripts/bench/train with the python of `scripts/peers mlx` (mlx[cpu], mlx-lm):

    train-mlx.py --config CONFIG.json --max-length L --steps N [--rank 8 --alpha 16 --dropout 0 --targets q,k,v,o --lr 1e-4]

The model is built from a Hugging Face configuration (the shape of the GGUF the other sides train, written by
scripts/bench/train) with mlx's own random initialisation in float32: a step's time depends on the shapes, not
on the values. `mlx_lm.tuner.linear_to_lora_layers` puts LoRA on the chosen projections of every block and
`mlx_lm.tuner.trainer.train` trains with mlx.optimizers.AdamW, batch 1, on seeded random token ids: every
sequence exactly L tokens after the shift (L + 1 ids), every position in the loss (mlx-lm's default loss).
mlx-lm's trainer does not clip gradients. Progress goes to stderr as JSON lines ({"event": "loaded"|"step"}),
flushed after each step (the trainer reports every step), so the driver times steps from outside; the result is
one JSON object on stdout.

mlx's CPU backend runs its matrix products through the BLAS library its wheel bundles; how many threads that uses
is whatever that library does with OMP_NUM_THREADS/OPENBLAS_NUM_THREADS (the driver sets both); `blas` in the
result names the library.
"""

import argparse
import json
import os
import sys
import tempfile
import time


def emit(**fields):
    print(json.dumps(fields), file=sys.stderr, flush=True)


def bundled_blas():
    """The BLAS shared library the process mapped (mlx_cpu's bundled one, or one preloaded in its place)."""
    names = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            base = os.path.basename(path)
            if "blas" in base and "scipy_openblas" not in base:  # numpy's own OpenBLAS is not mlx's
                names.add(base)
    return sorted(names)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--max-length", type=int, required=True)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--rank", type=int, default=8)
    parser.add_argument("--alpha", type=float, default=16)
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--targets", default="q,k,v,o")
    parser.add_argument("--lr", type=float, default=1e-4)
    args = parser.parse_args()

    start = time.perf_counter()
    import mlx.core as mx
    import mlx.nn as nn
    import mlx.optimizers as optim
    import mlx_lm
    import numpy as np
    from importlib.metadata import version
    from mlx.utils import tree_flatten
    from mlx_lm.tuner.callbacks import TrainingCallback
    from mlx_lm.tuner.trainer import TrainingArgs, train
    from mlx_lm.tuner.utils import linear_to_lora_layers
    from mlx_lm.utils import _get_classes

    mx.set_default_device(mx.cpu)
    mx.random.seed(0)
    config = json.load(open(args.config))
    model_class, args_class = _get_classes(config)
    model = model_class(args_class.from_dict(config))
    mx.eval(model.parameters())
    model.freeze()
    keys = [f"self_attn.{t}_proj" for t in args.targets.split(",")]
    linear_to_lora_layers(model, len(model.layers),
                          {"rank": args.rank, "scale": args.alpha / args.rank, "dropout": args.dropout, "keys": keys})
    trainable = sum(v.size for _, v in tree_flatten(model.trainable_parameters()))
    optimizer = optim.AdamW(learning_rate=args.lr, betas=[0.9, 0.999], eps=1e-8, weight_decay=0.01)

    rng = np.random.default_rng(7)
    vocabulary = config["vocab_size"]
    # (ids, offset) pairs as mlx-lm's datasets give them; offset 0: every position in the loss.
    dataset = [(rng.integers(0, vocabulary, size=args.max_length + 1).tolist(), 0) for _ in range(8)]
    emit(event="loaded", load_seconds=time.perf_counter() - start)

    losses = []

    class Progress(TrainingCallback):
        def on_train_loss_report(self, info):
            losses.append(info["train_loss"])
            emit(event="step", step=info["iteration"], total_steps=args.steps, loss=info["train_loss"])

    # The trainer saves the adapter at the end: into a scratch file, removed after.
    scratch, adapter_file = tempfile.mkstemp(suffix=".safetensors")
    os.close(scratch)
    training = TrainingArgs(batch_size=1, iters=args.steps, steps_per_report=1, steps_per_eval=10**9,
                            steps_per_save=10**9, max_seq_length=args.max_length + 1, adapter_file=adapter_file)
    # The trainer's progress display writes to stdout, which carries only the result: it goes to stderr.
    result_fd = os.dup(1)
    os.dup2(2, 1)
    try:
        train(model, optimizer, dataset, None, args=training, training_callback=Progress())
    finally:
        sys.stdout.flush()
        os.dup2(result_fd, 1)
        os.remove(adapter_file)
    print(json.dumps({
        "steps": args.steps, "losses": losses, "tokens_per_step": args.max_length, "trainable_parameters": trainable,
        "dtype": "float32", "blas": bundled_blas(),
        "versions": {"mlx": version("mlx"), "mlx-lm": mlx_lm.__version__, "python": sys.version.split()[0]},
    }))


if __name__ == "__main__":
    main()
