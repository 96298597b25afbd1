"""The CPU model of the AscendC API is as strict as the hardware (issue #10 §3): every single
synchronisation call of the kernel is needed (dropping any one of them is reported as a hazard or a
hang), a transfer grown past its buffer is reported, and a wrong LoadData or Fixpipe stride changes
the results so that they fail the reference comparison.

Dropping a sync call costs no rebuild: the model skips the call site named by `skip_sync_site`. The
grown transfer and the wrong strides are edits of a copy of op_kernel/, built as a kernel variant
(one dtype column, against the model library's runtime)."""
import os
import re
import shutil

import pytest

from ms_msa.testing import ascend_model, cases
from ms_msa.testing.numeric import assert_accepted, mismatches

KERNEL_H = os.path.join(ascend_model.OP_KERNEL, "msa_index_score_kernel.h")
KERNEL_HEADERS = sorted(f for f in os.listdir(ascend_model.OP_KERNEL) if f.endswith(".h"))
_SYNC = re.compile(r"\b(CrossCoreSetFlag|CrossCoreWaitFlag|SetFlag|WaitFlag|PipeBarrier)\b")

# Together these run every sync call of the kernel: fp16 and bf16 with int8 keys (both widening
# paths), contiguous and strided scales, several pages per core, columns no row sees, request-mode
# forcing, (the decode batch on one AI core: 7 S-tiles of 6 requests) the ring of S-tiles and the
# query buffers reused, and (scores beyond fp16's range, several tasks on one core) the range check
# and the fp32 recompute, of 16-bit and of int8 keys, (int8-key decode) the keys widened on the Cube and
# the query as half, held and not held, and (prefill of two requests, several token tiles each) the Cube's key cache in L1 and its
# fence, and (the same on one AI core) the scores routed through L1 with their buffers reused.
# (case name, AI cores of the chip)
CHIP = ascend_model.DEFAULT_AIC_CORES
SYNC_CASES = [("L1-prefill-unaligned", CHIP), ("L1-int8-dequant", CHIP), ("X-gqa-n2-4-tnd-int8", CHIP),
              ("X-bf16-int8", CHIP), ("L0-wide-table-257", CHIP), ("L1-decode-speculative", CHIP),
              ("L1-decode-lq1", 1), ("X-fp16-scores-overflow", 1), ("X-bf16-int8-scores-overflow", 1),
              ("X-int8-decode-m3", CHIP), ("X-int8-decode-query-inexact", 1), ("L1-prefill-multi-mtile", CHIP),
              ("L1-prefill-multi-mtile", 1)]


def _sync_sites_in_source():
    """"<header>:<line>:<api>" of every sync call in the kernel's headers (comments stripped)."""
    sites = set()
    for name in KERNEL_HEADERS:
        with open(os.path.join(ascend_model.OP_KERNEL, name)) as f:
            for number, line in enumerate(f, 1):
                code = line.split("//", 1)[0]
                calls = _SYNC.findall(code)
                assert len(calls) <= 1, f"one sync call per line, so that each can be dropped alone: {name}:{number}"
                if calls:
                    sites.add(f"{name}:{number}:{calls[0]}")
    return sites


def _run(name, **kw):
    case = cases.CASES_BY_NAME[name]
    inputs = cases.build_inputs(case)
    out = ascend_model.msa_index_score(*cases.call_args(inputs), **case.attrs(), **kw)
    return case, inputs, out


def test_every_sync_call_of_the_kernel_is_needed():
    in_source = _sync_sites_in_source()
    assert len(in_source) > 30
    executed_by = {}
    for name, aic_cores in SYNC_CASES:
        run = ascend_model.KernelRun()
        case, inputs, out = _run(name, run=run, aic_cores=aic_cores)
        assert_accepted(out, inputs.run_reference(), case.fill_value, name)
        for site in run.sync_sites:
            if site.split(":", 1)[0] in KERNEL_HEADERS:
                executed_by.setdefault(site, []).append((name, aic_cores))
    missing = in_source - set(executed_by)
    assert not missing, f"sync calls no case runs: {sorted(missing)}"
    unnoticed = []
    for site in sorted(in_source, key=lambda s: (s.split(":")[0], int(s.split(":")[1]))):
        reported = None
        for name, aic_cores in executed_by[site]:
            try:
                _run(name, skip_sync_site=site, aic_cores=aic_cores)
            except ascend_model.ModelError as err:
                reported = str(err)
                break
        if reported is None:
            unnoticed.append(site)
        else:
            assert any(kind in reported for kind in ("hazard:", "hang:", "flag still set")), (site, reported)
    assert not unnoticed, f"dropping these sync calls went unnoticed: {unnoticed}"


# --- edited copies of the kernel ------------------------------------------------------------------------

def _variant(tmp_path, edits, query="half", key="half"):
    """The kernel with each (old, new) text edit applied exactly once, built as a variant."""
    src = tmp_path / "op_kernel"
    shutil.copytree(ascend_model.OP_KERNEL, src)
    path = src / "msa_index_score_kernel.h"
    text = path.read_text()
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path.write_text(text)
    return ascend_model.KernelVariant(str(src), str(tmp_path / "build"), query, key)


def test_unedited_copy_passes(tmp_path):
    """The control: the variant machinery itself changes nothing."""
    variant = _variant(tmp_path, [])
    case, inputs, out = _run("L0-prefill-aligned", kernel=variant)
    assert_accepted(out, inputs.run_reference(), case.fill_value, case.name)


# A prefill without the key cache (one token tile per request: row-major S-tiles) and one with it (NZ S-tiles,
# some pages through L1); 128-row tasks in both, 64 rows per Vector core.
ROW_MAJOR_PREFILL, NZ_PREFILL = "L1-prefill-unaligned", "L0-prefill-aligned"


@pytest.mark.parametrize("edit,name", [
    # Each Vector core copies one row more of the S-tile than its rows: 65 rows into 64 ...
    (("DataCopy(result, stageGm_[at], myRows * kPageKeys);", "DataCopy(result, stageGm_[at], (myRows + 1) * kPageKeys);"),
     ROW_MAJOR_PREFILL),
    # ... or of each of the 8 column groups of an NZ page.
    (("static_cast<uint16_t>(myRows),", "static_cast<uint16_t>(myRows + 1),"), NZ_PREFILL),
], ids=["row-major", "nz"])
def test_transfer_grown_past_its_buffer_is_reported(tmp_path, edit, name):
    variant = _variant(tmp_path, [edit])
    with pytest.raises(ascend_model.ModelError, match=r"DataCopy.*out of bounds.*resultInQue_"):
        _run(name, kernel=variant)


@pytest.mark.parametrize("edit,name", [
    (("    qLoad.srcStride = rowsAligned / kFractal;", "    qLoad.srcStride = 1;"), NZ_PREFILL),  # LoadData (query)
    (("fix.dstStride = out == PageOut::kRowMajor ? kPageKeys : rows;",
      "fix.dstStride = out == PageOut::kRowMajor ? kPageKeys / 2 : rows;"), ROW_MAJOR_PREFILL),  # Fixpipe, row-major
    (("fix.dstStride = out == PageOut::kRowMajor ? kPageKeys : rows;",
      "fix.dstStride = out == PageOut::kRowMajor ? kPageKeys : rows / 2;"), NZ_PREFILL),  # Fixpipe (NZ)
], ids=["loaddata-srcstride", "fixpipe-dststride", "fixpipe-nz-dststride"])
def test_wrong_stride_fails_the_reference_comparison(tmp_path, edit, name):
    variant = _variant(tmp_path, [edit])
    case, inputs, out = _run(name, kernel=variant)
    assert mismatches(out, inputs.run_reference(), case.fill_value).any()


# int8-key decode with fp16 queries: the keys widened on the Cube. A wrong stride of the Fixpipe into L1 or of the
# transposed load out of it puts keys where the fp16 Mmad reads other keys' elements.
@pytest.mark.parametrize("edit", [
    ("    kLoad.srcStride = d / kFractal;  // fractals between key groups", "    kLoad.srcStride = 1;"),
    ("    fix.dstStride = d;", "    fix.dstStride = d / 2;"),
], ids=["widened-loaddata-srcstride", "widening-fixpipe-dststride"])
def test_wrong_widening_stride_fails_the_reference_comparison(tmp_path, edit):
    variant = _variant(tmp_path, [edit], key="int8_t")
    case, inputs, out = _run("X-int8-decode-m3-fp16-tnd", kernel=variant)
    assert mismatches(out, inputs.run_reference(), case.fill_value).any()


def _site_of(text, api):
    """The sync site of the kernel line holding `text`."""
    with open(KERNEL_H) as f:
        for number, line in enumerate(f, 1):
            if text in line:
                return f"msa_index_score_kernel.h:{number}:{api}"
    raise AssertionError(text)


def test_results_and_reports_do_not_depend_on_the_order_of_turns(monkeypatch):
    """The model's threads take turns; in the other order the scores are bit-identical and every
    dropped hand-over is still reported (hazards come from happens-before, not from an interleaving)."""
    dropped = [_site_of("if (stilesIssued_ >= kRingStages) CrossCoreWaitFlag", "CrossCoreWaitFlag"),
               _site_of("CrossCoreWaitFlag(kFlagStageReady + stage);", "CrossCoreWaitFlag"),
               _site_of("WaitFlag<HardEvent::MTE1_MTE2>(evKeyL1Free_[b]);", "WaitFlag")]
    results = {}
    for turns in ("forward", "reverse"):
        monkeypatch.setenv("ASCEND_MODEL_TURNS", turns)
        outs = [_run(name)[2] for name in ("L1-decode-speculative", "X-bf16-int8")]
        for site in dropped:  # on one AI core, so that the ring of S-tiles wraps
            with pytest.raises(ascend_model.ModelError, match="hazard|hang"):
                _run("L1-decode-lq1", skip_sync_site=site, aic_cores=1)
        results[turns] = outs
    for a, b in zip(results["forward"], results["reverse"]):
        assert a.tobytes() == b.tobytes()
