"""Kernel backends of MsaIndexScore, chosen by MindSpore's device target when a Cell is built."""
import mindspore as ms


def device_target():
    return ms.get_context("device_target")


def make_primitive(attrs):
    """A MindSpore primitive or Cell computing MsaIndexScore with `attrs` on the current device target.

    It takes the tensors in the aclnn order: query, key, block_table, scale, atten_mask,
    actual_seq_qlen, actual_seq_klen, start_loc.
    """
    target = device_target()
    if target == "CPU":
        from . import cpu
        return cpu.make_primitive(attrs)
    if target == "Ascend":
        from . import ascend
        return ascend.make_primitive(attrs)
    raise RuntimeError(f"MsaIndexScore: device target '{target}' has no ms_msa backend "
                       "(CPU and Ascend are available; see README 'Backends')")
