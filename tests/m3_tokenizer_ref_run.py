"""The reference side of tests/test_m3_text_prompt.py: transformers' tokenizer on a checkpoint folder's tokenizer
files, run in a subprocess so transformers never shares a process with MindSpore (tokenizer only: no model, no
torch tensors).

    python tests/m3_tokenizer_ref_run.py DIR SPEC_JSON
        SPEC_JSON = {"texts": [str, ...], "decode": [[int, ...], ...]}
        prints JSON {"class": tokenizer class name, "plain": [ids of each text, encode(text)],
                     "chat_text": [apply_chat_template of each text as one user message, tokenize=False],
                     "chat": [its ids, apply_chat_template(tokenize=True)], "decoded": [decode(ids), ...]}
"""
import json
import sys

from transformers import AutoTokenizer


def main(folder, spec_path):
    with open(spec_path, encoding="utf-8") as f:
        spec = json.load(f)
    tok = AutoTokenizer.from_pretrained(folder)
    chat = lambda text, **kw: tok.apply_chat_template([{"role": "user", "content": text}],  # noqa: E731
                                                      add_generation_prompt=True, **kw)
    out = {"class": type(tok).__name__,
           "plain": [tok.encode(text) for text in spec["texts"]],
           "chat_text": [chat(text, tokenize=False) for text in spec["texts"]],
           "chat": [list(chat(text, tokenize=True, return_dict=True)["input_ids"]) for text in spec["texts"]],
           "decoded": [tok.decode(ids) for ids in spec["decode"]]}
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main(*sys.argv[1:])
