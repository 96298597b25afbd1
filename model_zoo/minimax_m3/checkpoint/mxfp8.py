"""MXFP8 as MiniMax-M3's release stores it: the numbers, and the bytes of a safetensors tensor numpy can not type.

A quantized weight is a float8 e4m3fn tensor [out, in] plus one e8m0 scale per 32 consecutive input columns,
[out, in / 32], stored as bytes (safetensors ``U8``, or ``F8_E8M0`` for the same bytes). Its value is

    w[r, c] = e4m3(q[r, c]) * 2 ** (s[r, c // 32] - 127)

computed in float32, where it is exact (a 4-bit significand times a power of two inside float32's range, down to
its subnormals), then rounded once to the model's dtype. Sources: docs/m3_published_format.md.

numpy has no float8 dtypes, so safetensors' numpy reader refuses these tensors; ``raw_tensor`` reads their bytes
through a memory map from the file's own header (the safetensors layout: an 8-byte little-endian header length,
the JSON header with each tensor's dtype, shape and byte range, then the data).
"""
import json
import os
import struct

import numpy as np

BLOCK = 32                        # input columns per e8m0 scale (quantization_config.weight_block_size [1, 32])
FP8_DTYPE = "F8_E4M3"
SCALE_DTYPES = ("U8", "F8_E8M0")  # the release writes U8; the same bytes typed as e8m0 are accepted too
SCALE_SUFFIXES = ("weight_scale_inv", "weight_scale")   # both spellings are in use for the same data


def _e4m3fn_values():
    """float32 value of every e4m3fn byte: sign, 4 exponent bits (bias 7), 3 mantissa bits; exponent 0 is
    subnormal; 0x7F and 0xFF are NaN (the 'fn' variant has no infinities)."""
    codes = np.arange(256)
    sign = np.where(codes & 0x80, -1.0, 1.0)
    exponent, mantissa = (codes >> 3) & 0xF, codes & 0x7
    magnitude = np.where(exponent == 0, mantissa / 8.0 * 2.0 ** -6, (1 + mantissa / 8.0) * 2.0 ** (exponent - 7.0))
    values = (sign * magnitude).astype(np.float32)
    values[(codes & 0x7F) == 0x7F] = np.nan
    return values


def _e8m0_values():
    """float32 value of every e8m0 byte: 2 ** (byte - 127); 255 is NaN. 2 ** -127 is a float32 subnormal, exact."""
    with np.errstate(over="ignore"):
        values = np.ldexp(np.float32(1.0), np.arange(255) - 127).astype(np.float32)
    return np.append(values, np.float32(np.nan))


E4M3_VALUES = _e4m3fn_values()
E8M0_VALUES = _e8m0_values()


def scale_shape(weight_shape):
    """The e8m0 scale's shape for a weight of this shape: one per 32 input columns of every row."""
    *rows, cols = weight_shape
    return tuple(rows) + (cols // BLOCK,)


def dequantize(q, s, dtype=np.float32):
    """The weight of fp8 bytes `q` [..., out, in] (uint8) and e8m0 bytes `s` [..., out, in / 32] (uint8): exact in
    float32, then rounded once to `dtype`."""
    q, s = np.asarray(q, np.uint8), np.asarray(s, np.uint8)
    if q.shape[-1] % BLOCK or s.shape != scale_shape(q.shape):
        raise ValueError(f"MXFP8: weight {list(q.shape)} needs scales {list(scale_shape(q.shape))} "
                         f"(one per {BLOCK} input columns), got {list(s.shape)}")
    blocks = E4M3_VALUES[q].reshape(q.shape[:-1] + (q.shape[-1] // BLOCK, BLOCK))
    with np.errstate(over="ignore"):      # a product past float32's range is inf, as in torch
        w = (blocks * E8M0_VALUES[s][..., None]).reshape(q.shape)
        return w if np.dtype(dtype) == np.float32 else w.astype(dtype)


class SafetensorsHeader:
    """One safetensors file's header: each tensor's dtype, shape and byte range, checked against the file's size
    (a truncated shard is named here, before anything is read)."""

    def __init__(self, path):
        self.path = path
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(8)
            if len(head) < 8:
                raise ValueError(f"checkpoint file {os.path.basename(path)} is truncated: no safetensors header")
            (length,) = struct.unpack("<Q", head)
            if 8 + length > size:
                raise ValueError(f"checkpoint file {os.path.basename(path)} is truncated: its header says "
                                 f"{length} bytes, the file has {size - 8}")
            try:
                header = json.loads(f.read(length))
            except (UnicodeDecodeError, json.JSONDecodeError) as err:
                raise ValueError(f"checkpoint file {os.path.basename(path)}: unreadable safetensors header ({err})") \
                    from None
        header.pop("__metadata__", None)
        self.data_start, self.tensors = 8 + length, header
        for name, entry in header.items():
            end = entry["data_offsets"][1]
            if self.data_start + end > size:
                raise ValueError(f"checkpoint file {os.path.basename(path)} is truncated: tensor {name!r} ends at "
                                 f"byte {self.data_start + end}, the file has {size}")

    def raw(self, name):
        """The tensor's bytes as a read-only uint8 memory map in its shape (1-byte dtypes only)."""
        entry = self.tensors[name]
        begin, end = entry["data_offsets"]
        shape = tuple(entry["shape"])
        if end - begin != int(np.prod(shape)):
            raise ValueError(f"tensor {name!r} in {os.path.basename(self.path)}: {end - begin} bytes for shape "
                             f"{list(shape)} of a 1-byte dtype {entry['dtype']}")
        return np.memmap(self.path, np.uint8, "r", offset=self.data_start + begin, shape=shape)
