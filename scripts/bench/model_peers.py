"""The peers' side of scripts/bench/model: prompt processing and single-token decode of one GGUF file, one process
per measurement, printing one JSON object.

    model_peers.py llama FILE THREADS PROMPT DECODE REPEAT            (python of `scripts/peers llama`)
    model_peers.py ik FILE THREADS PROMPT DECODE REPEAT CONFIG        (python of `scripts/peers ik_llama`)

llama: mainline llama.cpp through llama-cpp-python. ik: ik_llama.cpp through the `ik-llama-cpp-python` wheel's
ctypes layer, called directly: its high-level class turns flash attention off on every CPU unless the optional
py-cpuinfo package reports AVX-VNNI, and exposes neither run-time repacking nor the batch size. CONFIG names the
options: `plain` (the file's types as they are, no flash attention), `rtr` (run-time repacking: the weights
rearranged at load into ik_llama.cpp's interleaved row types, such as Q4_K into Q4_K_R4, the same as its offline
repacked files), `fa` (flash attention), joined by `+` (`rtr+fa`).

Both feed the ids adapt-model-bench feeds, (i·7919 + 13) mod vocabulary, as one batch, then decode greedily one
token at a time on the KV cache; the best of REPEAT runs counts. The load includes any repacking.
"""

import json
import resource
import sys
import time


def prompt_ids(count, vocabulary):
    return [(i * 7919 + 13) % vocabulary for i in range(count)]


def llama(path, threads, prompt_count, decode, repeat):
    import llama_cpp
    import numpy as np

    start = time.perf_counter()
    llm = llama_cpp.Llama(model_path=path, n_ctx=prompt_count + decode + 16, n_batch=prompt_count, n_ubatch=prompt_count,
                          n_threads=threads, n_threads_batch=threads, verbose=False)
    load_ms = (time.perf_counter() - start) * 1000
    prompt = prompt_ids(prompt_count, llm.n_vocab())
    best_prompt = best_decode = float("inf")
    for _ in range(repeat):
        llm.reset()
        t0 = time.perf_counter()
        llm.eval(prompt)
        t1 = time.perf_counter()
        for _ in range(decode):
            # The last position's logits straight from the context: `Llama.scores` is filled only with logits_all.
            logits = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),))
            llm.eval([int(logits.argmax())])
        t2 = time.perf_counter()
        best_prompt, best_decode = min(best_prompt, t1 - t0), min(best_decode, t2 - t1)
    return {"load_ms": load_ms, "prompt_seconds": best_prompt, "decode_seconds": best_decode,
            "version": llama_cpp.__version__}


def ik(path, threads, prompt_count, decode, repeat, config):
    import ctypes

    import numpy as np
    import ik_llama_cpp
    from ik_llama_cpp import _ctypes_api as C
    from ik_llama_cpp._internals import make_batch_range, make_batch_single

    options = set(config.split("+"))
    unknown = options - {"plain", "rtr", "fa"}
    if unknown:
        raise SystemExit(f"model_peers: unknown ik_llama option(s) {sorted(unknown)}; use plain, rtr, fa joined by +")
    C.llama_backend_init()
    start = time.perf_counter()
    model_params = C.llama_model_default_params()
    model_params.repack_tensors = "rtr" in options
    model = C.llama_model_load_from_file(path.encode(), model_params)
    if not model:
        raise SystemExit(f"model_peers: ik_llama.cpp could not load {path}")
    context_params = C.llama_context_default_params()
    context_params.n_ctx = prompt_count + decode + 16
    context_params.n_batch = context_params.n_ubatch = prompt_count
    context_params.n_threads = context_params.n_threads_batch = threads
    context_params.flash_attn = "fa" in options
    context = C.llama_init_from_model(model, context_params)
    if not context:
        raise SystemExit("model_peers: ik_llama.cpp could not make a context")
    load_ms = (time.perf_counter() - start) * 1000
    vocabulary = C.llama_vocab_n_tokens(C.llama_model_get_vocab(model))
    prompt = prompt_ids(prompt_count, vocabulary)

    def run(batch):
        status = C.llama_decode(context, batch)
        C.llama_batch_free(batch)
        if status != 0:
            raise SystemExit(f"model_peers: llama_decode failed with {status}")

    def last_argmax():
        logits = C.llama_get_logits_ith(context, -1)
        return int(np.ctypeslib.as_array(ctypes.cast(logits, ctypes.POINTER(ctypes.c_float)), shape=(vocabulary,)).argmax())

    best_prompt = best_decode = float("inf")
    for _ in range(repeat):
        C.llama_kv_cache_clear(context)
        t0 = time.perf_counter()
        run(make_batch_range(prompt, pos_start=0, logits_last=True))
        t1 = time.perf_counter()
        for position in range(prompt_count, prompt_count + decode):
            run(make_batch_single(last_argmax(), position))
        t2 = time.perf_counter()
        best_prompt, best_decode = min(best_prompt, t1 - t0), min(best_decode, t2 - t1)
    C.llama_free(context)
    C.llama_free_model(model)
    return {"load_ms": load_ms, "prompt_seconds": best_prompt, "decode_seconds": best_decode,
            "version": ik_llama_cpp.__version__, "config": config}


def main():
    kind, path = sys.argv[1], sys.argv[2]
    threads, prompt_count, decode, repeat = (int(x) for x in sys.argv[3:7])
    if kind == "llama":
        result = llama(path, threads, prompt_count, decode, repeat)
    elif kind == "ik":
        result = ik(path, threads, prompt_count, decode, repeat, sys.argv[7])
    else:
        raise SystemExit("usage: model_peers.py llama|ik FILE THREADS PROMPT DECODE REPEAT [CONFIG]")
    result.update({"threads": threads, "prompt_tokens_per_second": prompt_count / result.pop("prompt_seconds"),
                   "decode_tokens_per_second": decode / result.pop("decode_seconds"),
                   "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024})
    print(json.dumps(result))


if __name__ == "__main__":
    main()
