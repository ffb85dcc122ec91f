"""Write a tiny random-weight Llama (config only) and a locally trained tokenizer.

Usage: python make_tiny_model.py OUT_DIR
No hub access: the tokenizer is trained here with `tokenizers` on generated text, and the
weights are never written (SGLang runs it with --load-format dummy).
"""

import json
import sys
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

VOCAB = 512
SPECIALS = ["<unk>", "<s>", "</s>"]

WORDS = (
    "the a prefill decode server router request token cache transfer batch queue "
    "scheduler rank worker model memory kernel tensor stream bootstrap timeout wait "
    "ready healthy stuck slow fast one two three four five six seven eight nine ten "
    "hello world what is how are you fine thanks again please tell me about it"
).split()


def corpus(n: int = 4000):
    # deterministic pseudo-random sentences (a fixed LCG), enough variety for 512 merges
    x = 12345
    letters = "abcdefghijklmnopqrstuvwxyz"
    for i in range(n):
        words = []
        for _ in range(5 + i % 11):
            x = (x * 1103515245 + 12345) % 2**31
            if x % 3:
                words.append(WORDS[x % len(WORDS)])
            else:
                words.append("".join(letters[(x >> s) % 26] for s in range(0, 4 + x % 4 * 3, 3)))
        yield " ".join(words) + "."


def make_tokenizer(out: Path) -> None:
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(), trainer=trainer)
    tok.save(str(out / "tokenizer.json"))
    (out / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
        "model_max_length": 2048, "add_bos_token": False,
    }, indent=1))
    (out / "special_tokens_map.json").write_text(json.dumps(
        {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}, indent=1))


def make_config(out: Path) -> None:
    cfg = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "vocab_size": VOCAB,
        "max_position_embeddings": 2048,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "hidden_act": "silu",
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "bos_token_id": 1,
        "eos_token_id": 2,
    }
    (out / "config.json").write_text(json.dumps(cfg, indent=1))
    (out / "generation_config.json").write_text(json.dumps(
        {"bos_token_id": 1, "eos_token_id": 2}, indent=1))


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    make_config(out)
    make_tokenizer(out)
    print(out)


if __name__ == "__main__":
    main()
