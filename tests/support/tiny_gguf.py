"""A tiny llama-architecture GGUF model with random weights, written by the ``gguf`` package, for
llama.cpp's server in the tests (about 0.5 MB, written in well under a second).

The vocabulary is a sentencepiece ("llama") one: ``<unk>``, ``<s>``, ``</s>``, the 256 byte tokens
(needed for byte fallback), then printable ASCII pieces, word-start pieces (``▁x``) and a few
JSON pieces. Random weights happily emit control bytes, which a JSON grammar lets into strings, so
one embedding column is a constant that ``output.weight`` reads as a bias against the special and
byte tokens: every answer the server's grammar constrains then parses.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

EMBED, FFN, BLOCKS, HEADS, CONTEXT = 64, 128, 2, 4, 512
CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def _vocab() -> tuple[list[str], list[float], list[int]]:
    from gguf import TokenType

    tokens = ["<unk>", "<s>", "</s>"]
    types = [TokenType.UNKNOWN, TokenType.CONTROL, TokenType.CONTROL]
    tokens += [f"<0x{b:02X}>" for b in range(256)]
    types += [TokenType.BYTE] * 256
    pieces = ["▁"] + [chr(c) for c in range(33, 127)]
    pieces += [f"▁{chr(c)}" for c in range(97, 123)] + [f"▁{d}" for d in "0123456789"]
    pieces += ['{"', '"grade"', '":', '"}', "▁{", "grade", "▁grade", '":▁', "}"]
    seen = set(tokens)
    for p in pieces:
        if p not in seen:
            seen.add(p)
            tokens.append(p)
            types.append(TokenType.NORMAL)
    scores = [0.0] * 259 + [float(len(t)) - i * 1e-4 for i, t in enumerate(tokens[259:])]
    return tokens, scores, [int(t) for t in types]


def write_tiny_gguf(path: str | Path, *, seed: int = 0) -> Path:
    """Write the model to ``path`` and return it."""
    import gguf

    path = Path(path)
    tokens, scores, types = _vocab()
    vocab = len(tokens)
    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_context_length(CONTEXT)
    w.add_embedding_length(EMBED)
    w.add_block_count(BLOCKS)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(HEADS)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(EMBED // HEADS)
    w.add_rope_freq_base(10000.0)
    w.add_vocab_size(vocab)
    w.add_file_type(0)  # all f32
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.add_chat_template(CHATML)

    def noise(*shape, scale=0.02):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    emb = noise(vocab, EMBED)
    emb[:, -1] = 1.0  # the constant column that output.weight reads as a per-token bias
    w.add_tensor("token_embd.weight", emb)
    for i in range(BLOCKS):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(EMBED, dtype=np.float32))
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            w.add_tensor(f"blk.{i}.{name}.weight", noise(EMBED, EMBED))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(EMBED, dtype=np.float32))
        w.add_tensor(f"blk.{i}.ffn_gate.weight", noise(FFN, EMBED))
        w.add_tensor(f"blk.{i}.ffn_up.weight", noise(FFN, EMBED))
        w.add_tensor(f"blk.{i}.ffn_down.weight", noise(EMBED, FFN))
    w.add_tensor("output_norm.weight", np.ones(EMBED, dtype=np.float32))
    out = noise(vocab, EMBED, scale=0.5)
    out[:, -1] = 0.0
    out[:259, -1] = -3.0  # <unk>, <s>, </s> and the byte tokens: strongly disfavoured
    w.add_tensor("output.weight", out)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
