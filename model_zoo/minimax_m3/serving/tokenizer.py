"""CheckpointTokenizer: text in and text out with a checkpoint's own tokenizer files (Hugging Face layout).

tokenizer.json is run by the `tokenizers` library (no tokenizer is written here); the chat template is rendered
the way transformers' ``apply_chat_template`` renders it, so the ids equal transformers' for the same files;
read_stop_ids reads the ids generation stops at.
"""
import json
import os
from datetime import datetime

TOKENIZER_FILE = "tokenizer.json"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
CHAT_TEMPLATE_FILE = "chat_template.jinja"
GENERATION_CONFIG_FILE = "generation_config.json"
# The named special tokens transformers hands a chat template as variables (its special_tokens_map).
SPECIAL_TOKEN_NAMES = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")


class TokenizerFileError(ValueError):
    """A checkpoint's tokenizer.json, tokenizer_config.json, chat template or generation_config.json is missing
    where it is needed, or can not be read."""


def _read_json(path, required=False):
    """The JSON object in `path`; None if the file does not exist and is not `required`."""
    if not os.path.isfile(path):
        if required:
            raise TokenizerFileError(f"no {os.path.basename(path)} in {os.path.dirname(path)!r}")
        return None
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise TokenizerFileError(f"{path} can not be read as JSON: {err}") from None
    if not isinstance(value, dict):
        raise TokenizerFileError(f"{path} must hold a JSON object, got {type(value).__name__}")
    return value


def _token_text(value):
    """A special token as tokenizer_config.json stores it: a string, or a serialized AddedToken {"content": ...}."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


class CheckpointTokenizer:
    """The tokenizer of the checkpoint in `checkpoint_dir`: ``tokenizer.json`` (required), ``tokenizer_config.json``
    (optional: the special tokens, a ``chat_template``) and ``chat_template.jinja`` (optional; it takes priority
    over tokenizer_config.json's template, as in transformers).

    Args:
        checkpoint_dir (str): the checkpoint folder.

    Raises:
        TokenizerFileError: no tokenizer.json, or a tokenizer file that can not be read.

    Examples:
        >>> tok = CheckpointTokenizer("path/to/MiniMax-M3")
        >>> ids = tok.encode_chat("Hello")          # the chat-templated prompt, as apply_chat_template gives
        >>> tok.decode(ids)
    """

    def __init__(self, checkpoint_dir):
        import tokenizers         # imported here: only the text paths of the CLI need it

        self.checkpoint_dir = os.fspath(checkpoint_dir)
        path = os.path.join(self.checkpoint_dir, TOKENIZER_FILE)
        if not os.path.isfile(path):
            raise TokenizerFileError(f"no {TOKENIZER_FILE} in {self.checkpoint_dir!r} (text prompts need the "
                                     f"checkpoint's own tokenizer)")
        try:
            self.backend = tokenizers.Tokenizer.from_file(path)
        except Exception as err:  # noqa: BLE001 -- the Rust side raises plain Exception for any malformed file
            raise TokenizerFileError(f"{path} is not a valid tokenizer.json: {err}") from None
        config = _read_json(os.path.join(self.checkpoint_dir, TOKENIZER_CONFIG_FILE)) or {}
        self.special_tokens = {name: _token_text(config[name]) for name in SPECIAL_TOKEN_NAMES
                               if _token_text(config.get(name)) is not None}
        self.chat_template = self._find_chat_template(config)
        self._compiled = None

    def _find_chat_template(self, config):
        path = os.path.join(self.checkpoint_dir, CHAT_TEMPLATE_FILE)
        if os.path.isfile(path):
            try:
                with open(path, encoding="utf-8") as f:
                    return f.read()
            except (OSError, UnicodeDecodeError) as err:
                raise TokenizerFileError(f"{path} can not be read: {err}") from None
        template = config.get("chat_template")
        if isinstance(template, list):      # several named templates: transformers uses the one named "default"
            named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
            template = named.get("default")
        if template is not None and not isinstance(template, str):
            raise TokenizerFileError(f"{TOKENIZER_CONFIG_FILE}: chat_template must be a string (or a list of "
                                     f"{{name, template}} with a 'default'), got {type(template).__name__}")
        return template

    @property
    def vocab_size(self):
        """Ids the tokenizer can produce (added tokens included)."""
        return self.backend.get_vocab_size(with_added_tokens=True)

    def token_id(self, token):
        """The id of `token` (a string), or None if the tokenizer does not have it."""
        return self.backend.token_to_id(token)

    def encode(self, text):
        """Ids of plain `text`, with the special tokens tokenizer.json's post-processor adds (as transformers'
        ``encode(text)`` does when the checkpoint has a tokenizer.json)."""
        return list(self.backend.encode(text, add_special_tokens=True).ids)

    def render_chat(self, text):
        """The chat template applied to one user message, with the assistant's generation prompt.

        Raises:
            TokenizerFileError: the checkpoint has no chat template, or the template fails to compile or render.
        """
        if self.chat_template is None:
            raise TokenizerFileError(f"no chat template in {self.checkpoint_dir!r}: neither {CHAT_TEMPLATE_FILE} "
                                     f"nor a chat_template in {TOKENIZER_CONFIG_FILE}")
        import jinja2
        try:
            if self._compiled is None:
                self._compiled = _template_environment().from_string(self.chat_template)
            # The variables transformers passes: the conversation, no tools or documents (None, not undefined:
            # templates test `tools is not none`), the generation prompt flag and the named special tokens.
            return self._compiled.render(messages=[{"role": "user", "content": text}], tools=None, documents=None,
                                         add_generation_prompt=True, **self.special_tokens)
        except jinja2.TemplateError as err:
            raise TokenizerFileError(f"the chat template of {self.checkpoint_dir!r} failed: "
                                     f"{type(err).__name__}: {err}") from None

    def encode_chat(self, text):
        """Ids of the chat-templated `text`. The template already wrote every special token it wants, so none is
        added after it (transformers' apply_chat_template tokenizes with add_special_tokens=False)."""
        return list(self.backend.encode(self.render_chat(text), add_special_tokens=False).ids)

    def decode(self, ids):
        """Text of `ids`, special tokens kept (transformers' ``decode`` default). Ids the tokenizer does not have
        (a model's vocabulary is often padded past its tokenizer's) give no text: see unknown_ids."""
        return self.backend.decode([int(i) for i in ids], skip_special_tokens=False)

    def unknown_ids(self, ids):
        """The ids in `ids` that are no token of this tokenizer."""
        return [int(i) for i in ids if self.backend.id_to_token(int(i)) is None]


def _template_environment():
    """A jinja2 environment with the settings and helpers chat templates are written for (transformers'): sandboxed
    and immutable (templates come from model repositories: untrusted), trim_blocks and lstrip_blocks, the
    loopcontrols extension, a tojson that does not HTML-escape, raise_exception and strftime_now."""
    import jinja2
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(value, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    return env


def read_stop_ids(checkpoint_dir, tokenizer=None):
    """The token ids generation stops at, and where they came from.

    ``eos_token_id`` of generation_config.json (an int or a list of ints); without that file (or that key), the
    id of tokenizer_config.json's ``eos_token`` in `tokenizer`; else none.

    Args:
        checkpoint_dir (str): the checkpoint folder.
        tokenizer (CheckpointTokenizer, optional): the checkpoint's tokenizer, for the eos_token fallback.

    Returns:
        tuple: (list[int] stop ids, possibly empty; str naming their source).

    Raises:
        TokenizerFileError: generation_config.json is not valid JSON or its eos_token_id is not an int or a list
            of ints, or tokenizer_config.json's eos_token is not in tokenizer.json.
    """
    path = os.path.join(os.fspath(checkpoint_dir), GENERATION_CONFIG_FILE)
    config = _read_json(path)
    if config is not None and config.get("eos_token_id") is not None:
        eos = config["eos_token_id"]
        ids = eos if isinstance(eos, list) else [eos]
        if not ids or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in ids):
            raise TokenizerFileError(f"{path}: eos_token_id must be a non-negative int or a non-empty list of them, "
                                     f"got {eos!r}")
        return list(dict.fromkeys(ids)), f"eos_token_id of {GENERATION_CONFIG_FILE}"
    why = f"no {GENERATION_CONFIG_FILE}" if config is None else f"no eos_token_id in {GENERATION_CONFIG_FILE}"
    eos = tokenizer.special_tokens.get("eos_token") if tokenizer is not None else None
    if eos is None:
        return [], f"{why} and no eos_token in {TOKENIZER_CONFIG_FILE}"
    eos_id = tokenizer.token_id(eos)
    if eos_id is None:
        raise TokenizerFileError(f"{TOKENIZER_CONFIG_FILE}: eos_token {eos!r} is not a token of {TOKENIZER_FILE}")
    return [eos_id], f"{why}: eos_token {eos!r} of {TOKENIZER_CONFIG_FILE}"
