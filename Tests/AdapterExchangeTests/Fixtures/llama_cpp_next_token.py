"""Next-token logits of llama.cpp (through llama-cpp-python) for token-id prompts, with or without a LoRA.

Reads a JSON request {"model", "lora" (or null), "prompts": [[id, ...], ...], "ids": [[id, ...], ...]} from the
file named by argv[1]; prints {"top1": [id per prompt], "logits": [[logit of each requested id] per prompt]}.
The prompts are token ids, so both sides see the same tokens whatever their tokenizers do.
"""
import json
import sys

import llama_cpp
import numpy as np
from llama_cpp import Llama

request = json.load(open(sys.argv[1]))
kwargs = dict(model_path=request["model"], n_ctx=256, n_threads=2, n_gpu_layers=0, verbose=False, seed=0)
if request.get("lora"):
    kwargs["lora_path"] = request["lora"]
llm = Llama(**kwargs)
top1, logits = [], []
for prompt, wanted in zip(request["prompts"], request["ids"]):
    llm.reset()
    llm.eval(prompt)
    # The last position's logits straight from the context: Llama.scores is only filled with logits_all.
    row = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(llm.n_vocab(),)).astype(np.float64)
    top1.append(int(np.argmax(row)))
    logits.append([float(row[i]) for i in wanted])
print(json.dumps({"top1": top1, "logits": logits}))
