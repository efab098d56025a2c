"""The PyTorch + PEFT side of scripts/bench/train: LoRA training on the CPU, one configuration per process.

Run by scripts/bench/train inside its own virtual environment (torch, transformers, peft, gguf from PyPI):

    train-peft.py train --model M.gguf --data F.jsonl --max-length L --threads T --steps N [...]
    train-peft.py train --config CONFIG.json --max-length L --threads T --steps N [...]
    train-peft.py matmul --threads T [--size 1024 --repeats 20]

`train` loads the GGUF through transformers (which dequantizes every tensor to float32), wraps it with a
PEFT LoRA adapter on the chosen projections and trains with torch.optim.AdamW, one sequence per step,
printing one JSON object per line on stderr as it goes ({"event": "loaded"|"step", ...}, flushed, so the
driver can time each step from outside) and one JSON result on stdout. Prompts are formatted as one ChatML
user turn and only the completion (with its end-of-turn marker) is in the loss, as `adapt train` does.

With `--config` (a Hugging Face configuration: the shape of a published model whose GGUF here holds seeded random
weights, scripts/bench/shape-models) the model is built from it with transformers' own random initialisation in
float32, and trained on seeded random token ids, every sequence exactly --max-length tokens, all in the loss: a
step's time depends on the shapes, not on the values.

`matmul` times torch's own float32 matrix multiply (torch does not use OpenBLAS for it), for reference.
"""

import argparse
import json
import os
import sys
import time

# SmolLM2's default system line, used by its chat template when no system message is given.
DEFAULT_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"


def emit(**fields):
    print(json.dumps(fields), file=sys.stderr, flush=True)


def rss_bytes():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return None


def chat_prompt(tokenizer, prompt):
    """The prompt as a user turn followed by the assistant header, as text."""
    messages = [{"role": "user", "content": prompt}]
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True), "gguf"
    text = f"<|im_start|>system\n{DEFAULT_SYSTEM}<|im_end|>\n<|im_start|>user\n{prompt}<|im_end|>\n<|im_start|>assistant\n"
    return text, "chatml"


def sequences(tokenizer, path, max_length):
    """(input ids, labels) per example, cut to max_length; labels are -100 on the prompt."""
    result, template, lengths = [], None, []
    with open(path) as lines:
        for line in lines:
            if not line.strip():
                continue
            example = json.loads(line)
            text, template = chat_prompt(tokenizer, example["prompt"])
            prompt = tokenizer(text, add_special_tokens=False)["input_ids"]
            completion = tokenizer(example["completion"] + "<|im_end|>", add_special_tokens=False)["input_ids"]
            ids = (prompt + completion)
            lengths.append(len(ids))
            ids = ids[:max_length]
            labels = ([-100] * len(prompt) + completion)[:max_length]
            if len(prompt) >= max_length - 1:
                raise SystemExit(f"train-peft: a prompt has {len(prompt)} tokens, no room for a completion in {max_length}")
            result.append((ids, labels))
    return result, template, lengths


def train(args):
    import torch

    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    import peft
    import transformers
    from importlib.metadata import version
    from transformers import AutoModelForCausalLM, AutoTokenizer

    transformers.utils.logging.disable_progress_bar()

    start = time.perf_counter()
    if args.config:
        from transformers import AutoConfig
        values = json.load(open(args.config))
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(AutoConfig.for_model(**values), dtype=torch.float32)
    else:
        folder, name = os.path.split(os.path.abspath(args.model))
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
        model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    model.config.use_cache = False
    base_parameters = sum(p.numel() for p in model.parameters())
    tied = model.get_output_embeddings().weight.data_ptr() == model.get_input_embeddings().weight.data_ptr()
    config = peft.LoraConfig(r=args.rank, lora_alpha=args.alpha, lora_dropout=args.dropout, bias="none",
                             target_modules=[f"{t}_proj" for t in args.targets.split(",")], task_type="CAUSAL_LM")
    model = peft.get_peft_model(model, config)
    model.train()
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=args.lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    if args.config:
        generator = torch.Generator().manual_seed(7)
        ids = torch.randint(0, values["vocab_size"], (8, args.max_length), generator=generator).tolist()
        data, template, lengths = [(x, x) for x in ids], None, [args.max_length] * len(ids)
    else:
        data, template, lengths = sequences(tokenizer, args.data, args.max_length)
    short = [n for n in lengths if n < args.max_length]
    if short:
        raise SystemExit(f"train-peft: {len(short)} examples are shorter than {args.max_length} tokens (shortest {min(short)}); "
                         "the benchmark needs every step to be exactly --max-length tokens")
    emit(event="loaded", load_seconds=time.perf_counter() - start, rss_bytes=rss_bytes())

    losses, begin = [], time.perf_counter()
    for step in range(1, args.steps + 1):
        ids, labels = data[(step - 1) % len(data)]
        output = model(input_ids=torch.tensor([ids]), labels=torch.tensor([labels]))
        output.loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(trainable, 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(output.loss.item())
        emit(event="step", step=step, total_steps=args.steps, loss=losses[-1], gradient_norm=float(norm),
             tokens=len(ids), elapsed_seconds=time.perf_counter() - begin)

    print(json.dumps({
        "steps": args.steps, "losses": losses, "tokens_per_step": args.max_length,
        "base_parameters": base_parameters, "trainable_parameters": sum(p.numel() for p in trainable),
        "tied_output": tied, "attention": getattr(model.config, "_attn_implementation", None),
        "chat_template": template, "shortest_example_tokens": min(lengths),
        "threads": torch.get_num_threads(),
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "peft": peft.__version__, "gguf": version("gguf"),
                     "python": sys.version.split()[0]},
        "mkl": torch.backends.mkl.is_available(), "mkldnn": torch.backends.mkldnn.is_available(),
    }))


def matmul(args):
    import torch

    torch.set_num_threads(args.threads)
    n = args.size
    generator = torch.Generator().manual_seed(0)
    a = torch.rand(n, n, generator=generator) - 0.5
    b = torch.rand(n, n, generator=generator) - 0.5
    torch.mm(a, b)
    rates, cpu_rates = [], []
    for _ in range(args.repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        torch.mm(a, b)
        rates.append(2 * n**3 / (time.perf_counter() - t0) / 1e9)
        cpu_rates.append(2 * n**3 / (time.process_time() - c0) / 1e9)
    rates.sort()
    cpu_rates.sort()
    print(json.dumps({"n": n, "threads": args.threads, "repeats": args.repeats,
                      "best_gflops": rates[-1], "median_gflops": rates[len(rates) // 2],
                      "best_gflops_per_cpu_second": cpu_rates[-1],
                      "median_gflops_per_cpu_second": cpu_rates[len(cpu_rates) // 2]}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    t = commands.add_parser("train")
    source = t.add_mutually_exclusive_group(required=True)
    source.add_argument("--model", help="a GGUF file transformers dequantizes (needs --data)")
    source.add_argument("--config", help="a Hugging Face configuration to build a random-weight model from")
    t.add_argument("--data")
    t.add_argument("--max-length", type=int, required=True)
    t.add_argument("--threads", type=int, required=True)
    t.add_argument("--steps", type=int, required=True)
    t.add_argument("--rank", type=int, default=8)
    t.add_argument("--alpha", type=float, default=16)
    t.add_argument("--dropout", type=float, default=0.0)
    t.add_argument("--targets", default="q,k,v,o")
    t.add_argument("--lr", type=float, default=1e-4)
    m = commands.add_parser("matmul")
    m.add_argument("--threads", type=int, required=True)
    m.add_argument("--size", type=int, default=1024)
    m.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    if args.command == "train" and args.model and not args.data:
        parser.error("--model needs --data")
    train(args) if args.command == "train" else matmul(args)


if __name__ == "__main__":
    main()
