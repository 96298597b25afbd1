"""Text in, text out for MiniMax-M3: `generate --prompt TEXT [--chat]` (model_zoo/minimax_m3/serving/tokenizer.py,
cli.py) and generate_greedy's stop_ids.

The tokenizer is built here with the `tokenizers` library: a byte-level BPE trained on a few sentences, with
MiniMax-style chat markers as special tokens (]~!b[ begins the text, ]~b] opens a turn, [e~[ ends one: the EOS)
and a post-processor that puts ]~!b[ in front of plain text. Its ids for plain text and for the chat-templated
prompt, the rendered template and the decoded text must equal transformers' (AutoTokenizer on the same files, run
by tests/m3_tokenizer_ref_run.py in a subprocess: transformers never shares a process with MindSpore). Greedy
generation must stop exactly at an EOS id the tiny random model really produces, in GRAPH_MODE and PyNative: the
EOS is the last token and no model step runs after it.
"""
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import m3_golden  # noqa: E402

from model_zoo.minimax_m3 import MiniMaxM3ForCausalLM, generate_greedy  # noqa: E402
from model_zoo.minimax_m3.generate import main  # noqa: E402
from model_zoo.minimax_m3.model.config import tiny_config  # noqa: E402
from model_zoo.minimax_m3.model.random_init import init_random_weights  # noqa: E402
from model_zoo.minimax_m3.serving.tokenizer import CheckpointTokenizer, TokenizerFileError, read_stop_ids  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
REF_RUNNER = os.path.join(HERE, "m3_tokenizer_ref_run.py")
MISSING = m3_golden.reference_missing()
needs_reference = pytest.mark.skipif(MISSING is not None, reason=f"reference unavailable: {MISSING}")

BOS, TURN, EOS = "]~!b[", "]~b]", "[e~["
SPECIALS = [BOS, TURN, EOS, "<think>", "</think>"]
SENTENCES = ["The quick brown fox jumps over the lazy dog.", "MiniMax-M3 reads its own tokenizer.",
             "Hello, world! How are you today?", "Sparse attention selects the top blocks of the cache.",
             "Ünïcödé ☃ text and émoji 🙂 too."]
# MiniMax-style: a default system turn, turns "]~b]role\n...[e~[\n", the assistant's role named "ai". The tags
# sit on lines of their own and indented, as templates are written: only trim_blocks and lstrip_blocks (as
# transformers renders) keep those newlines and spaces out of the prompt.
CHAT_TEMPLATE = """{{ bos_token }}
{%- if messages[0]['role'] != 'system' %}
]~b]system
You are a helpful assistant.[e~[
{% endif %}
{% for message in messages %}
  {% if message['role'] not in ['system', 'user', 'assistant'] %}
    {{ raise_exception('unknown role ' + message['role']) }}
  {% endif %}
]~b]{{ 'ai' if message['role'] == 'assistant' else message['role'] }}
{{ message['content'] }}[e~[
{% endfor %}
{% if add_generation_prompt %}
]~b]ai
<think>
{% endif %}"""
RENDERED_HELLO = f"{BOS}{TURN}system\nYou are a helpful assistant.{EOS}\n{TURN}user\nHello{EOS}\n{TURN}ai\n<think>\n"
TEXTS = ["Hello", "Hello, world! How are you today?", "  two  spaces, a ☃ and [e~[ inside\nnext line", ""]


def write_tokenizer(folder, *, tokenizer_class="PreTrainedTokenizerFast", template_file=False):
    """tokenizer.json, tokenizer_config.json (eos_token as a serialized AddedToken, as transformers saves it) and
    the chat template, in tokenizer_config.json or in chat_template.jinja. Returns the tokenizers.Tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=360, special_tokens=SPECIALS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(SENTENCES * 3, trainer)
    tok.post_processor = processors.TemplateProcessing(single=f"{BOS} $A", pair=f"{BOS} $A $B",
                                                       special_tokens=[(BOS, tok.token_to_id(BOS))])
    assert tok.get_vocab_size() <= 512, "ids must fit the tiny model's vocabulary"
    os.makedirs(folder, exist_ok=True)
    tok.save(os.path.join(folder, "tokenizer.json"))
    config = {"tokenizer_class": tokenizer_class, "bos_token": BOS,
              "eos_token": {"__type": "AddedToken", "content": EOS, "lstrip": False, "rstrip": False,
                            "normalized": False, "single_word": False, "special": True},
              "clean_up_tokenization_spaces": False, "model_max_length": 4096}
    if template_file:
        with open(os.path.join(folder, "chat_template.jinja"), "w", encoding="utf-8") as f:
            f.write(CHAT_TEMPLATE)
        config["chat_template"] = "{{ raise_exception('chat_template.jinja must win') }}"
    else:
        config["chat_template"] = CHAT_TEMPLATE
    _write_json(os.path.join(folder, "tokenizer_config.json"), config)
    return tok


def _write_json(path, value):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f)


def reference(folder, texts, decode):
    """transformers' AutoTokenizer on `folder` (see m3_tokenizer_ref_run.py for the keys)."""
    spec = os.path.join(folder, ".ref_spec.json")
    _write_json(spec, {"texts": texts, "decode": decode})
    try:
        proc = subprocess.run([m3_golden.reference_python(), REF_RUNNER, folder, spec], capture_output=True,
                              text=True, timeout=300,
                              env=dict(os.environ, TRANSFORMERS_VERBOSITY="error", TOKENIZERS_PARALLELISM="false"))
    finally:
        os.remove(spec)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout)


# ---- the tokenizer against transformers' ----

@needs_reference
@pytest.mark.parametrize("tokenizer_class,template_file", [("PreTrainedTokenizerFast", False),
                                                           ("GPT2Tokenizer", True)])
def test_ids_template_and_decoded_text_equal_transformers(tmp_path, tokenizer_class, template_file):
    folder = str(tmp_path)
    write_tokenizer(folder, tokenizer_class=tokenizer_class, template_file=template_file)
    if tokenizer_class == "GPT2Tokenizer":      # MiniMax's releases' class; AutoTokenizer then reads config.json
        _write_json(os.path.join(folder, "config.json"), {"model_type": "gpt2"})
    tok = CheckpointTokenizer(folder)
    decode = [tok.encode_chat(TEXTS[2]) + [5, 300, 2, 0, 4, 17], [100, 101, 102, 2, 1], list(range(0, 360, 7))]
    ref = reference(folder, TEXTS, decode)
    assert [tok.encode(t) for t in TEXTS] == ref["plain"]
    assert [tok.render_chat(t) for t in TEXTS] == ref["chat_text"]
    assert [tok.encode_chat(t) for t in TEXTS] == ref["chat"]
    assert [tok.decode(ids) for ids in decode] == ref["decoded"]


@pytest.mark.parametrize("template_file", [False, True])
def test_chat_template_renders_with_trimmed_blocks_and_adds_no_special_tokens_after(tmp_path, template_file):
    write_tokenizer(str(tmp_path), template_file=template_file)
    tok = CheckpointTokenizer(str(tmp_path))
    assert tok.render_chat("Hello") == RENDERED_HELLO
    bos = tok.token_id(BOS)
    plain, chat = tok.encode("Hello"), tok.encode_chat("Hello")
    assert plain[0] == bos and bos not in plain[1:], "plain text gets tokenizer.json's post-processor BOS"
    assert chat.count(bos) == 1 and chat[0] == bos, "the template wrote the BOS; none is added after it"
    assert tok.decode(chat) == RENDERED_HELLO, "byte-level BPE decodes back to the rendered text"
    assert tok.special_tokens == {"bos_token": BOS, "eos_token": EOS}


def test_tokenizer_file_errors_are_named(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(TokenizerFileError, match="no tokenizer.json in"):
        CheckpointTokenizer(str(empty))
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "tokenizer.json").write_text('{"model": {"type": "BPE", "vocab": ')
    with pytest.raises(TokenizerFileError, match="is not a valid tokenizer.json"):
        CheckpointTokenizer(str(broken))
    folder = str(tmp_path / "tok")
    write_tokenizer(folder)
    config_path = os.path.join(folder, "tokenizer_config.json")
    with open(config_path, encoding="utf-8") as f:
        config = json.load(f)
    for template, error in (("{% if %}", "TemplateSyntaxError"),
                            ("{{ raise_exception('no chat here') }}", "TemplateError: no chat here")):
        _write_json(config_path, dict(config, chat_template=template))
        with pytest.raises(TokenizerFileError, match=f"chat template of .* failed: {error}"):
            CheckpointTokenizer(folder).encode_chat("Hi")
    _write_json(config_path, {k: v for k, v in config.items() if k != "chat_template"})
    with pytest.raises(TokenizerFileError, match="no chat template in .*chat_template.jinja"):
        CheckpointTokenizer(folder).encode_chat("Hi")
    (tmp_path / "tok" / "tokenizer_config.json").write_text("{not json")
    with pytest.raises(TokenizerFileError, match="tokenizer_config.json can not be read as JSON"):
        CheckpointTokenizer(folder)


def test_stop_ids_from_generation_config_else_tokenizer_config_else_none(tmp_path):
    folder = str(tmp_path)
    write_tokenizer(folder)
    tok = CheckpointTokenizer(folder)
    eos = tok.token_id(EOS)
    assert read_stop_ids(folder, tok) == ([eos], f"no generation_config.json: eos_token '{EOS}' of "
                                                 f"tokenizer_config.json")
    gen = os.path.join(folder, "generation_config.json")
    _write_json(gen, {"eos_token_id": 7})
    assert read_stop_ids(folder, tok) == ([7], "eos_token_id of generation_config.json")
    _write_json(gen, {"eos_token_id": [7, 9, 7]})
    assert read_stop_ids(folder, tok)[0] == [7, 9]
    _write_json(gen, {"bos_token_id": 0})
    assert read_stop_ids(folder, tok)[0] == [eos]
    assert read_stop_ids(folder, None) == ([], "no eos_token_id in generation_config.json and no eos_token in "
                                               "tokenizer_config.json")
    for bad in ("7", [], [1.5], True):
        _write_json(gen, {"eos_token_id": bad})
        with pytest.raises(TokenizerFileError, match="generation_config.json: eos_token_id must be"):
            read_stop_ids(folder, tok)
    with open(gen, "w") as f:
        f.write("{")
    with pytest.raises(TokenizerFileError, match="generation_config.json can not be read as JSON"):
        read_stop_ids(folder, tok)
    os.remove(gen)
    config_path = os.path.join(folder, "tokenizer_config.json")
    with open(config_path, encoding="utf-8") as f:
        config = json.load(f)
    _write_json(config_path, dict(config, eos_token="<|not-a-token|>"))
    with pytest.raises(TokenizerFileError, match="eos_token '<|not-a-token|>' is not a token of tokenizer.json"):
        read_stop_ids(folder, CheckpointTokenizer(folder))


# ---- generate_greedy's stop ids ----

class _Counted:
    """The model as generate_greedy sees it, counting its steps (model calls)."""

    def __init__(self, model):
        self.model, self.calls = model, 0

    def __getattr__(self, name):
        return getattr(self.model, name)

    def __call__(self, *inputs):
        self.calls += 1
        return self.model(*inputs)


def _first_new(tokens, start):
    """The first index >= start whose token did not occur before it (greedy stops at a token's first occurrence)."""
    found = [k for k in range(start, len(tokens)) if tokens[k] not in tokens[:k]]
    assert found, f"greedy repeats itself ({tokens}): choose another prompt or seed"
    return found[0]


@pytest.fixture(scope="module")
def tiny_model():
    return init_random_weights(MiniMaxM3ForCausalLM(tiny_config(), cache_tokens=256), 7)


@pytest.mark.parametrize("mode", ["graph", "pynative"])
def test_generation_stops_exactly_at_an_eos_the_model_produces(tiny_model, mode):
    prompt = [int(t) for t in np.random.default_rng(11).integers(0, 360, 23)]
    full = generate_greedy(tiny_model, prompt, 6, mode=mode, return_selections=True)
    assert not full["stopped"] and len(full["tokens"]) == 6
    k = _first_new(full["tokens"], 2)                  # the token generated at step 2 (or the first new one after)
    eos = full["tokens"][k]
    absent = next(t for t in range(512) if t not in full["tokens"])
    counted = _Counted(tiny_model)
    stopped = generate_greedy(counted, prompt, 6, mode=mode, return_selections=True, stop_ids=[absent, eos])
    assert stopped["tokens"] == full["tokens"][:k + 1] and stopped["stopped"]
    assert counted.calls == k + 1, "prefill + one step per decoded token: none after the EOS"
    rows = len(prompt) + k
    assert stopped["logits"].shape == (rows, full["logits"].shape[1])
    np.testing.assert_allclose(stopped["logits"], full["logits"][:rows], rtol=0, atol=2e-5)
    for layer, picks in stopped["selections"].items():
        np.testing.assert_array_equal(picks, full["selections"][layer][:rows])
    # The prefill's token is the EOS: one token, no decode step.
    first = generate_greedy(counted, prompt, 6, mode=mode, stop_ids=[full["tokens"][0]])
    assert first["tokens"] == full["tokens"][:1] and first["stopped"] and counted.calls == k + 2
    assert first["logits"].shape[0] == len(prompt) and first["decode_seconds"] >= 0
    # A stop id never produced, or none: all new_tokens.
    for stop_ids in ([absent], None):
        again = generate_greedy(tiny_model, prompt, 6, mode=mode, stop_ids=stop_ids)
        assert again["tokens"] == full["tokens"] and not again["stopped"]


def test_stop_ids_are_checked(tiny_model):
    for stop_ids, error, match in (([512], ValueError, "stop_ids: token 512 is outside"),
                                   ([-1], ValueError, "stop_ids: token -1"), (["2"], TypeError, "stop_ids"),
                                   (7, TypeError, "stop_ids"), ([True], TypeError, "stop_ids")):
        with pytest.raises(error, match=match):
            generate_greedy(tiny_model, [1, 2], 2, mode="pynative", stop_ids=stop_ids)


# ---- the command line ----

def _cli_error(capsys, argv):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "Traceback" not in err, err
    return err


def test_cli_refuses_bad_text_arguments_with_named_messages(tmp_path, capsys):
    folder = str(tmp_path / "ckpt")
    write_tokenizer(folder)
    assert "not allowed with argument" in _cli_error(capsys, ["--checkpoint", folder, "--prompt", "Hi",
                                                              "--prompt-ids", "1,2"])
    assert "--prompt needs --checkpoint DIR" in _cli_error(capsys, ["--prompt", "Hi"])
    assert "unrecognized arguments: --prompt-i" in _cli_error(capsys, ["--prompt-i", "1,2"]), "no abbreviations"
    for flag in ("--chat", "--ignore-eos"):
        assert f"{flag} needs --prompt TEXT" in _cli_error(capsys, ["--prompt-ids", "1,2", flag])
    with open(os.path.join(folder, "tokenizer.json"), encoding="utf-8") as f:
        no_bos = dict(json.load(f), post_processor=None)      # no post-processor: empty text gives no ids
    _write_json(os.path.join(folder, "tokenizer.json"), no_bos)
    assert "--prompt: the text gives no tokens" in _cli_error(capsys, ["--checkpoint", folder, "--prompt", ""])
    no_tokenizer = str(tmp_path / "bare")
    os.makedirs(no_tokenizer)
    assert "--prompt: no tokenizer.json in" in _cli_error(capsys, ["--checkpoint", no_tokenizer, "--prompt", "Hi"])
    gen = os.path.join(folder, "generation_config.json")
    _write_json(gen, {"eos_token_id": "2"})
    assert "--prompt: " in (err := _cli_error(capsys, ["--checkpoint", folder, "--prompt", "Hi"]))
    assert "generation_config.json: eos_token_id must be a non-negative int" in err
    os.remove(gen)
    config_path = os.path.join(folder, "tokenizer_config.json")
    with open(config_path, encoding="utf-8") as f:
        config = json.load(f)
    _write_json(config_path, {k: v for k, v in config.items() if k != "chat_template"})
    assert "--prompt: no chat template in" in _cli_error(capsys, ["--checkpoint", folder, "--prompt", "Hi", "--chat"])
    with open(os.path.join(folder, "tokenizer.json"), "w") as f:
        f.write("[]")
    assert "is not a valid tokenizer.json" in _cli_error(capsys, ["--checkpoint", folder, "--prompt", "Hi"])


@pytest.fixture(scope="module")
def text_checkpoint(tmp_path_factory):
    if MISSING is not None:
        pytest.skip(f"reference unavailable (the tiny checkpoint is written by transformers): {MISSING}")
    folder = str(tmp_path_factory.mktemp("m3_text"))
    m3_golden.write_tiny_checkpoint(folder, naming="release")
    write_tokenizer(folder)
    return folder


def _unknown(tok, tokens):
    """The completion header's note on ids the tokenizer does not have (the tiny model's vocabulary is 512, the
    tokenizer's 360)."""
    unknown = [t for t in tokens if t >= tok.vocab_size]
    return f"; ids {unknown} are not in the tokenizer and give no text" if unknown else ""


def _generated(out):
    found = re.search(r"generated (\d+) tokens: \[([0-9, ]*)\]", out)
    assert found, out
    tokens = [int(t) for t in found.group(2).split(",") if t.strip()]
    assert len(tokens) == int(found.group(1))
    return tokens


def test_cli_chat_prompt_prints_text_and_stops_at_the_checkpoint_eos(text_checkpoint, capsys, monkeypatch,
                                                                     tmp_path):
    monkeypatch.chdir(tmp_path)                       # graph-compile failure dumps stay out of the tree
    tok = CheckpointTokenizer(text_checkpoint)
    text = "Hello, world! How are you today?"
    argv = ["--checkpoint", text_checkpoint, "--prompt", text, "--chat", "--new-tokens", "6"]
    gen = os.path.join(text_checkpoint, "generation_config.json")
    # No generation_config.json: tokenizer_config.json's eos_token; --ignore-eos: all 6 tokens, whatever comes.
    main(argv + ["--ignore-eos", "--mode", "pynative"])
    out = capsys.readouterr().out
    full = _generated(out)
    assert len(full) == 6 and "EOS ids: [] (--ignore-eos)" in out
    assert f"=== prompt ===\n{tok.render_chat(text)}\n=== completion (no EOS ids{_unknown(tok, full)}) ===\n" \
           f"{tok.decode(full)}\n" in out
    # An EOS the model really produces (as a list, beside one it never does): stops there, in both modes.
    k = _first_new(full, 2)
    eos = full[k]
    _write_json(gen, {"eos_token_id": [tok.token_id(EOS), eos]})
    try:
        for mode in ("graph", "pynative"):
            dump = tmp_path / f"logits_{mode}.npy"
            main(argv + ["--mode", mode, "--dump-logits", str(dump)])
            out = capsys.readouterr().out
            assert _generated(out) == full[:k + 1], mode
            assert f"EOS ids: {[tok.token_id(EOS), eos]} (eos_token_id of generation_config.json)" in out
            assert f"=== completion (stopped at EOS id {eos}{_unknown(tok, full[:k + 1])}) ===\n" \
                   f"{tok.decode(full[:k + 1])}\n" in out
            assert np.load(dump).shape[0] == len(tok.encode_chat(text)) + k, "rows only for the steps that ran"
    finally:
        os.remove(gen)


def test_cli_plain_prompt_uses_the_post_processor_and_the_tokenizer_eos(text_checkpoint, capsys, monkeypatch,
                                                                       tmp_path):
    monkeypatch.chdir(tmp_path)
    tok = CheckpointTokenizer(text_checkpoint)
    text = "The quick brown fox"
    main(["--checkpoint", text_checkpoint, "--prompt", text, "--new-tokens", "3", "--mode", "pynative"])
    out = capsys.readouterr().out
    tokens = _generated(out)
    eos = tok.token_id(EOS)
    assert f"prompt: {len(tok.encode(text))} tokens" in out
    assert f"EOS ids: [{eos}] (no generation_config.json: eos_token '{EOS}' of tokenizer_config.json)" in out
    assert f"=== prompt ===\n{BOS}{text}\n" in out
    assert eos not in tokens[:-1] and (len(tokens) == 3 or tokens[-1] == eos)


@pytest.mark.parametrize("flag", ["--tp", "--block-split"])
def test_cli_text_prompt_on_two_ranks_equals_one_process(text_checkpoint, capsys, monkeypatch, tmp_path, flag):
    """The ranks re-run the arguments: each tokenizes the text itself (the ranks compare their prompts and stop
    ids before generating) and all stop at the same EOS."""
    monkeypatch.chdir(tmp_path)
    text = "Sparse attention?"
    argv = ["--checkpoint", text_checkpoint, "--prompt", text, "--chat", "--new-tokens", "5", "--mode", "pynative"]
    main(argv + ["--ignore-eos"])
    full = _generated(capsys.readouterr().out)
    eos = full[_first_new(full, 1)]
    gen = os.path.join(text_checkpoint, "generation_config.json")
    _write_json(gen, {"eos_token_id": eos})
    try:
        main(argv)
        single = capsys.readouterr().out
        proc = subprocess.run([sys.executable, "-m", "model_zoo.minimax_m3.generate", *argv, flag, "2",
                               "--timeout", "200"], capture_output=True, text=True, timeout=240, cwd=ROOT,
                              env=dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")))
    finally:
        os.remove(gen)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert _generated(proc.stdout) == _generated(single) == full[:full.index(eos) + 1]
    assert _text_block(proc.stdout) == _text_block(single)


def _text_block(out):
    """The CLI's EOS line, decoded prompt and completion (printed between the tokens and the speeds)."""
    return out[out.index("EOS ids:"):out.index("\nprefill:")]


def test_cli_refuses_an_eos_id_outside_the_model_vocabulary(text_checkpoint, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    gen = os.path.join(text_checkpoint, "generation_config.json")
    _write_json(gen, {"eos_token_id": 600})
    try:
        for extra in ([], ["--tp", "2"]):               # --tp: refused by the launcher, before any process starts
            err = _cli_error(capsys, ["--checkpoint", text_checkpoint, "--prompt", "Hi", "--mode", "pynative",
                                      *extra])
            assert "the checkpoint's EOS id 600 (eos_token_id of generation_config.json) is outside the " \
                   "vocabulary [0, 512)" in err, extra
    finally:
        os.remove(gen)
