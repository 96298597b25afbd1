"""The attributes of MsaIndexScore: defaults, Python-type checks, normalisation.

Value rules (which layouts exist, which sparse modes, ranges) are the C++ rules' job (see _lib).
"""
import math
import numbers

DEFAULTS = {
    "layout_key": "BBND",
    "sparse_mode": 3,
    "init_blocks": 0,
    "local_blocks": 1,
    "local_window": "request",
    "fill_value": float("-inf"),
    "block_size": 128,
    "max_kv_blocks": None,
    "scale_layout": "auto",
}

ATTR_ORDER = tuple(DEFAULTS)


def _int(name, value, allow_none=False):
    if allow_none and value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"MsaIndexScore: '{name}' must be an int{' or None' if allow_none else ''}, "
                        f"got {type(value).__name__}")
    return int(value)


def _str(name, value):
    if not isinstance(value, str):
        raise TypeError(f"MsaIndexScore: '{name}' must be a str, got {type(value).__name__}")
    return value


def normalize(layout_key, sparse_mode, init_blocks, local_blocks, local_window, fill_value, block_size,
              max_kv_blocks, scale_layout="auto"):
    """Returns the attribute dict (layout_key and scale_layout upper-cased, local_window and "auto"
    lower-cased) or raises TypeError."""
    if isinstance(fill_value, bool) or not isinstance(fill_value, numbers.Real):
        raise TypeError(f"MsaIndexScore: 'fill_value' must be a float, got {type(fill_value).__name__}")
    fill = float(fill_value)
    if math.isfinite(fill) and abs(fill) > 3.4028234663852886e38:
        raise ValueError(f"MsaIndexScore: 'fill_value' {fill} does not fit in float32")
    return {
        "layout_key": _str("layout_key", layout_key).upper(),
        "sparse_mode": _int("sparse_mode", sparse_mode),
        "init_blocks": _int("init_blocks", init_blocks),
        "local_blocks": _int("local_blocks", local_blocks),
        "local_window": _str("local_window", local_window).lower(),
        "fill_value": fill,
        "block_size": _int("block_size", block_size),
        "max_kv_blocks": _max_kv_blocks(max_kv_blocks),
        "scale_layout": _scale_layout(_str("scale_layout", scale_layout)),
    }


def _max_kv_blocks(value):
    # The C++ rules and the kernel's attributes carry None as -1, so a negative width is refused here, while
    # it can still be told apart from None (the C++ rule words it the same way for its own callers).
    value = _int("max_kv_blocks", value, allow_none=True)
    if value is not None and value < 0:
        raise ValueError(f"MsaIndexScore: 'max_kv_blocks' must be >= 0 or None, got {value}")
    return value


def _scale_layout(text):
    return "auto" if text.lower() == "auto" else text.upper()
