"""Checks adapt's PEFT and mlx exports against its GGUF-LoRA export with llama.cpp's own Python tools.

argv: GGUF-LoRA file, PEFT directory, mlx directory, n_head, n_head_kv. The GGUF is read with gguf-py's
GGUFReader; the safetensors files are parsed here from their documented layout (not with adapt's reader).
PEFT's B of q and k, permuted the way llama.cpp's HF converter permutes llama q/k weights, must give the GGUF's
lora_b; every other tensor must be equal; mlx's tensors are PEFT's transposed and its scale is alpha / r.
Prints a JSON summary; exits 1 on the first mismatch.
"""
import json
import struct
import sys

import numpy as np
from gguf import GGUFReader


def safetensors(path):
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    out = {}
    for name, entry in header.items():
        assert entry["dtype"] == "F32", name
        begin, end = entry["data_offsets"]
        out[name] = np.frombuffer(raw[8 + n + begin:8 + n + end], dtype="<f4").reshape(entry["shape"])
    return meta, out


def converter_permute(weights, heads):
    # convert_hf_to_gguf.py, LlamaModel.permute: HF's half-split rotary rows to llama.cpp's interleaved rows.
    return weights.reshape(heads, 2, weights.shape[0] // heads // 2, *weights.shape[1:]).swapaxes(1, 2).reshape(weights.shape)


def fail(message):
    print(json.dumps({"ok": False, "error": message}))
    sys.exit(1)


gguf_path, peft_dir, mlx_dir, n_head, n_head_kv = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
reader = GGUFReader(gguf_path)
def field(key):
    f = reader.fields[key]
    value = f.parts[f.data[0]]
    return bytes(value).decode() if f.types[0].name == "STRING" else value[0]
if field("general.type") != "adapter" or field("adapter.type") != "lora":
    fail("the GGUF is not a LoRA adapter")
alpha = float(field("adapter.lora.alpha"))
gguf_tensors = {t.name: np.array(t.data) for t in reader.tensors}

peft_meta, peft = safetensors(peft_dir + "/adapter_model.safetensors")
peft_config = json.load(open(peft_dir + "/adapter_config.json"))
mlx_meta, mlx = safetensors(mlx_dir + "/adapters.safetensors")
mlx_config = json.load(open(mlx_dir + "/adapter_config.json"))
if peft_meta.get("format") != "pt" or mlx_meta.get("format") != "mlx":
    fail("safetensors format metadata")
if peft_config["peft_type"] != "LORA" or float(peft_config["lora_alpha"]) != alpha:
    fail("PEFT config alpha")
rank = peft_config["r"]
if abs(mlx_config["lora_parameters"]["scale"] * rank - alpha) > 1e-6 or mlx_config["lora_parameters"]["rank"] != rank:
    fail("mlx scale")

gguf_names = {"q_proj": "attn_q", "k_proj": "attn_k", "v_proj": "attn_v", "o_proj": "attn_output",
              "gate_proj": "ffn_gate", "up_proj": "ffn_up", "down_proj": "ffn_down"}
checked = 0
permuted = 0
for key, a in peft.items():
    if not key.endswith(".lora_A.weight"):
        continue
    module = key[len("base_model.model."):-len(".lora_A.weight")]
    b = peft[key.replace("lora_A", "lora_B")]
    layer = int(module.split(".")[2])
    projection = module.split(".")[-1]
    stem = "blk.%d.%s.weight" % (layer, gguf_names[projection])
    heads = {"q_proj": n_head, "k_proj": n_head_kv}.get(projection)
    expected_b = converter_permute(b, heads) if heads else b
    permuted += 1 if heads else 0
    if not np.array_equal(gguf_tensors[stem + ".lora_a"], a):
        fail(stem + ".lora_a differs from PEFT's A")
    if not np.array_equal(gguf_tensors[stem + ".lora_b"], expected_b):
        fail(stem + ".lora_b differs from PEFT's B as the converter permutes it")
    if heads and np.array_equal(b, gguf_tensors[stem + ".lora_b"]):
        fail(stem + ": PEFT's B was not permuted")
    if not np.array_equal(mlx[module + ".lora_a"], a.T) or not np.array_equal(mlx[module + ".lora_b"], b.T):
        fail(module + ": mlx's tensors are not PEFT's transposed")
    checked += 1
print(json.dumps({"ok": True, "pairs": checked, "permuted": permuted, "rank": rank, "alpha": alpha}))
