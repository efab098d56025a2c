#!/usr/bin/env python3
"""The measurements behind scripts/bench/generate; prints one Markdown section on stdout.

Both engines get the same chat prompt (rendered by the GGUF's own template, checked to tokenize to the same
ids), the same thread count, a cold cache, greedy decoding, and the same number of decoded tokens (adapt's
answer length; llama.cpp decodes as many, ignoring end-of-generation). Timings:
- prompt: one batched pass over the prompt (adapt's prompt_ms; llama.cpp's eval of the prompt ids);
- decode: per token, pick the argmax and run the token through the model, the last token not run
  (adapt's generation_ms; the same loop over llama.cpp's eval).
Each engine runs RUNS times; the median is reported and every run is listed.
Hot swap: rank-8 and rank-16 adapter files, each loaded and attached SWAP_REPEATS times in one `adapt` process;
the median of each phase (read, verify, decode, attach) is reported. --swap-only measures only that, without
llama.cpp.
"""
import argparse
import hashlib
import json
import os
import re
import statistics
import struct
import subprocess
import sys
import time

import numpy as np

import history

RUNS = 3
SWAP_REPEATS = 50
MAX_TOKENS = 64
PROMPT = ("Here are some notes from a long week. " * 2 + "On Monday the team met to plan the garden: tomatoes, beans, "
          "three kinds of lettuce, and a row of sunflowers along the fence. On Tuesday it rained and nobody went "
          "outside, so we sorted seeds and wrote labels. Wednesday brought the new hose, which leaked at the tap. "
          "Thursday was spent fixing the hose and arguing about compost. On Friday the first beans were planted "
          "and the neighbours came over to look. ") * 2 + "Write a long story about this garden, in many paragraphs."


def adapt_run(args, extra):
    command = [args.adapt, "generate", "--model", args.model, "--prompt", PROMPT, "--threads", str(args.threads)] + extra
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return done


def median(values):
    return statistics.median(values)


def write_adapter(path, model_path, hyper, rank=8):
    """An adapter of `rank` in adapt's adapter file format (Sources/Training/AdapterFile.swift), random weights."""
    digest = hashlib.sha256(open(model_path, "rb").read()).hexdigest()
    rng = np.random.default_rng(0)
    names, shapes, blobs = [], [], []
    C, Cq, Ckv = hyper["width"], hyper["width"], hyper["kv_width"]
    shape_of = {"q": (Cq, C), "k": (Ckv, C), "v": (Ckv, C), "o": (C, Cq)}
    for block in range(hyper["blocks"]):
        for target in ["q", "k", "v", "o"]:
            out, inp = shape_of[target]
            for matrix, shape in (("a", [rank, inp]), ("b", [out, rank])):
                names.append(f"blk.{block}.{target}.lora_{matrix}")
                shapes.append(shape)
                blobs.append((rng.standard_normal(shape[0] * shape[1]) * 0.01).astype("<f4").tobytes())
    metadata = {
        "base_model_digest": digest, "chat_convention": "chatml", "targets": ["q", "k", "v", "o"], "rank": rank,
        "alpha": 2.0 * rank, "steps": 0, "metrics": {}, "training_examples": 0, "held_out_examples": 0,
        "truncated_examples": 0, "training_tokens": 0, "training_configuration": {},
        "training_configuration_digest": hashlib.sha256(b"bench").hexdigest(),
    }
    header = json.dumps({"metadata": metadata, "tensors": [{"name": n, "shape": s} for n, s in zip(names, shapes)]},
                        sort_keys=True, separators=(",", ":")).encode()
    body = b"ADAPTLRA" + struct.pack("<II", 1, len(header)) + header + b"".join(blobs)
    with open(path, "wb") as f:
        f.write(body + hashlib.sha256(body).digest())
    return sum(len(b) for b in blobs)


def gguf_hyperparameters(path):
    """Blocks, width and key/value width from a GGUF file's metadata (enough of the format to get there)."""
    scalar = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
    with open(path, "rb") as f:
        def read(fmt):
            return struct.unpack(fmt, f.read(struct.calcsize(fmt)))[0]

        def string():
            return f.read(read("<Q")).decode("utf-8", "replace")

        def value(kind):
            if kind in scalar:
                return read(scalar[kind])
            if kind == 8:
                return string()
            if kind == 9:
                item, count = read("<I"), read("<Q")
                return [value(item) for _ in range(count)]
            raise ValueError(f"GGUF value type {kind}")

        assert f.read(4) == b"GGUF", f"{path} is not a GGUF file"
        read("<I")
        read("<Q")
        meta = {}
        for _ in range(read("<Q")):
            key = string()
            kind = read("<I")
            meta[key] = value(kind)
    arch = meta["general.architecture"]
    width = int(meta[f"{arch}.embedding_length"])
    heads, kv_heads = int(meta[f"{arch}.attention.head_count"]), int(meta[f"{arch}.attention.head_count_kv"])
    return {"blocks": int(meta[f"{arch}.block_count"]), "width": width, "kv_width": width // heads * kv_heads}


SWAP = re.compile(r"read in ([0-9.]+) ms, verified in ([0-9.]+) ms, decoded in ([0-9.]+) ms, attached in ([0-9.]+) ms"
                  r".*the first swap ([0-9.]+) ms")


def hot_swap(args, hyper, rank):
    """Medians of SWAP_REPEATS loads and attaches of a rank-`rank` adapter file, per phase, in one process."""
    path = os.path.join(args.work, f"bench-rank{rank}.lora")
    size = write_adapter(path, args.model, hyper, rank=rank)
    command = [args.adapt, "generate", "--model", args.model, "--prompt", "Hi", "--threads", str(args.threads),
               "--adapter", path, "--swap-repeats", str(SWAP_REPEATS), "--greedy", "--max-tokens", "1", "--json"]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    read, verify, decode, attach, first = (float(x) for x in SWAP.search(done.stderr).groups())
    return {"rank": rank, "bytes": os.path.getsize(path), "floats": size, "read": read, "verify": verify,
            "decode": decode, "attach": attach, "total": read + verify + decode + attach, "first": first}


def swap_section(args, hyper):
    rows = [hot_swap(args, hyper, rank) for rank in (8, 16)]
    out = [f"Hot swap of an adapter file on q/k/v/o of {hyper['blocks']} blocks (`adapt generate --adapter FILE "
           f"--swap-repeats {SWAP_REPEATS}`: median of {SWAP_REPEATS} loads in one process, release build; "
           f"target < 8 ms for rank 8, file included):", "",
           "| rank | file | read | verify (SHA-256) | decode | attach | total | first swap of the process |",
           "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        out.append(f"| {r['rank']} | {r['bytes'] / 1e6:.1f} MB | {r['read']:.3f} ms | {r['verify']:.3f} ms | "
                   f"{r['decode']:.3f} ms | {r['attach']:.3f} ms | {r['total']:.2f} ms | {r['first']:.2f} ms |")
    return out


def record(args, name, title, load_before, body):
    """Prints the section; with --write also puts it into BENCHMARKS.md, the run it replaces into the history."""
    command = f"scripts/bench/generate --threads {args.threads}" + (" --swap-only" if args.swap_only else "") + (
        " --write" if args.write else "")
    run = {"run_utc": history.now_utc(), "commit": history.commit(), "machine": history.machine(),
           "load": f"{' '.join(load_before)} before, {history.load_average()} after", "command": command}
    print(history.render(name, title, run, body))
    if args.write:
        moved = history.record(name, title, run, body)
        print(f"bench/generate: wrote BENCHMARKS.md; the run it replaced went to BENCHMARKS-history.csv "
              f"({moved} rows)", file=sys.stderr)


def memory_bandwidth():
    """GB/s of a large array copy (bytes read + bytes written), the best of five."""
    a = np.ones(64 * 1024 * 1024, dtype=np.float32)  # 256 MiB
    b = np.empty_like(a)
    best = 0.0
    for _ in range(5):
        start = time.perf_counter()
        np.copyto(b, a)
        elapsed = time.perf_counter() - start
        best = max(best, 2 * a.nbytes / elapsed / 1e9)
    return best


def last_logits(llm):
    """The logits of the last token evaluated (llm.scores is only filled with logits_all=True)."""
    return np.ctypeslib.as_array(llama_cpp.llama_get_logits(llm.ctx), shape=(llm.n_vocab(),)).copy()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--adapt", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--work", required=True)
    parser.add_argument("--swap-only", action="store_true")
    parser.add_argument("--write", action="store_true", help="replace this benchmark's section of BENCHMARKS.md")
    args = parser.parse_args()
    if args.write:
        history.exit_unless_clean("bench/generate")
    load_before = open("/proc/loadavg").read().split()[:3]
    if args.swap_only:
        rows = swap_section(args, gguf_hyperparameters(args.model))
        record(args, "hot-swap", "Adapter hot swap", load_before,
               "SmolLM2-135M-Instruct Q4_1. " + "\n".join(rows))
        return
    # llama.cpp is only needed past this point (and its module functions above use it as a global).
    global jinja2, llama_cpp
    import jinja2
    import llama_cpp

    # adapt
    adapt_runs = []
    for _ in range(RUNS):
        done = adapt_run(args, ["--greedy", "--max-tokens", str(MAX_TOKENS), "--json"])
        adapt_runs.append(json.loads(done.stdout))
    first = adapt_runs[0]
    n_decode = first["generated_tokens"]

    # llama.cpp on the same prompt ids and thread count
    llm = llama_cpp.Llama(model_path=args.model, n_ctx=1024, n_batch=512, n_threads=args.threads,
                          n_threads_batch=args.threads, verbose=False)
    template = jinja2.Environment(loader=jinja2.BaseLoader()).from_string(llm.metadata["tokenizer.chat_template"])
    text = template.render(messages=[{"role": "user", "content": PROMPT}], add_generation_prompt=True)
    ids = llm.tokenize(text.encode(), add_bos=False, special=True)
    same_prompt = len(ids) == first["prompt_tokens"]
    llama_runs = []
    for _ in range(RUNS):
        llm.reset()
        start = time.perf_counter()
        llm.eval(ids)
        prompt_s = time.perf_counter() - start
        tokens = []
        start = time.perf_counter()
        for i in range(n_decode):
            token = int(np.argmax(last_logits(llm)))
            tokens.append(token)
            if i < n_decode - 1:
                llm.eval([token])
        decode_s = time.perf_counter() - start
        llama_runs.append({"prompt_tps": len(ids) / prompt_s, "decode_tps": n_decode / decode_s, "tokens": tokens})
    same_tokens = llama_runs[0]["tokens"] == first["token_ids"]

    # hot swap: rank-8 and rank-16 adapters for this model
    swap_rows = swap_section(args, gguf_hyperparameters(args.model))

    # bytes per decoded token
    n_params = llama_cpp.llama_model_n_params(llm.model)
    gguf_weight_bytes = llama_cpp.llama_model_size(llm.model)
    ours = 4 * n_params
    bandwidth = memory_bandwidth()

    ap = median([r["prompt_tokens"] / (r["prompt_ms"] / 1000) for r in adapt_runs])
    ad = median([r["tokens_per_second"] for r in adapt_runs])
    lp = median([r["prompt_tps"] for r in llama_runs])
    ld = median([r["decode_tps"] for r in llama_runs])
    f = lambda x: f"{x:,.1f}"
    out = []
    out.append(f"`adapt generate` against llama-cpp-python {llama_cpp.__version__}; SmolLM2-135M-Instruct Q4_1; "
               f"{args.threads} threads each; median of {RUNS} runs, cold cache, greedy.")
    out.append("")
    out.append(f"Prompt: {first['prompt_tokens']} tokens (llama.cpp tokenizes it to {len(ids)}: "
               f"{'same' if same_prompt else 'DIFFERENT'}); decode: {n_decode} tokens "
               f"({'same tokens as' if same_tokens else 'tokens differ from'} llama.cpp's greedy answer).")
    out.append("")
    out.append("| | prompt tokens/s | decode tokens/s |")
    out.append("| --- | ---: | ---: |")
    out.append(f"| adapt | {f(ap)} | {f(ad)} |")
    out.append(f"| llama.cpp | {f(lp)} | {f(ld)} |")
    out.append(f"| adapt / llama.cpp | {ap / lp:.2f} | {ad / ld:.2f} |")
    out.append("")
    out.append("Runs (prompt, decode tokens/s): adapt " + "; ".join(
        f"{f(r['prompt_tokens'] / (r['prompt_ms'] / 1000))}, {f(r['tokens_per_second'])}" for r in adapt_runs)
        + " — llama.cpp " + "; ".join(f"{f(r['prompt_tps'])}, {f(r['decode_tps'])}" for r in llama_runs) + ".")
    out.append("")
    out.extend(swap_rows)
    out.append("")
    out.append(f"Bytes read per decoded token: adapt decodes a single token straight from the file's quantized "
               f"blocks (`QuantizedMatVec`, dequantizing inside the matrix-vector product), as llama.cpp does: "
               f"{gguf_weight_bytes / 1e6:.0f} MB of weights per token for both, plus the key/value cache "
               f"(adapt keeps it in float32, llama.cpp in float16). Prompt processing runs sgemm on the float32 copy "
               f"made at load ({n_params / 1e6:.1f} M parameters × 4 B = {ours / 1e6:.0f} MB, read once per batch, "
               f"not per token). This machine copies memory at about {bandwidth:.1f} GB/s (numpy, read + write), so "
               f"weight traffic alone would allow about {bandwidth * 1e9 / gguf_weight_bytes:.0f} tokens/s: decode is "
               f"bound by arithmetic here, where llama.cpp's integer dot products on 8-bit-quantized activations "
               f"do more per cycle than float dequantization.")
    record(args, "generate", "Generation", load_before, "\n".join(out))


if __name__ == "__main__":
    main()
