"""The per-core counts of CANN's production MsaIndexScore (A2/A3 kernel, arch22), reconstructed from its
own tiling and kernel source, in the units ascendc/cpu_model counts (ms_msa.testing.ascend_cost).

Source read: vllm-project/vllm-ascend at commit 573a871a9a2ec58324562a9bebb3712717755576 (2026-08-22),
csrc/attention/msa_index_score/ (abbreviated below: T = op_host/msa_index_score_tiling.cpp,
C = op_kernel/msa_index_score_common.h, S = op_kernel/arch22/msa_index_score_task.h,
K = op_kernel/arch22/msa_index_score_kernel.h, M = op_kernel/arch22/msa_block_mmad.h,
E = op_kernel/arch22/msa_index_score_epilogue.h, X = the vendored catlass cross_core_sync.hpp, read in
csrc/attention/sparse_attention_score/op_kernel/attn_infra/arch/cross_core_sync.hpp). Each rule below
names the lines it comes from. Facts only; no code of it is used.

This is the version the stored sources hold: one task per 128-row M-tile of a request, all of its
S-tiles on one core. The later kvChunks split of long decode requests (ops-transformer PR 11754, ported
by vllm-ascend #16426 / #16515, the published 950 figure) is not in any stored source, so it is not
modelled: the estimate is of the design as read, and says so.
"""

from .ascend_cost import Shape

ROW_TILE_M = 128        # C:30  MSA_ROW_TILE_M
M_ALIGN = 16            # C:33  MSA_M_ALIGN
BLOCKS_PER_STILE = 8    # C:41  MSA_BLOCKS_PER_STILE (one Cube -> Vector hand-over per 8 pages)
WORKSPACE_STAGES = 8    # C:46  MSA_WORKSPACE_STAGES (the S ring)
REVERSE_DEPTH = WORKSPACE_STAGES - 1  # K:65 CrossCoreFlagWithReverse<REVERSE_DEPTH>; X:108-127
ROWS_PER_PASS = 16      # C:63  MSA_ROWS_PER_PASS
STILE_WIDTH = BLOCKS_PER_STILE * 128
STAGE_BLOCKS = 256      # E:45  MSA_STAGE_BLOCKS (score flushed in 256-block windows)
REPEAT_BYTES = 256

RING_DEPTH = REVERSE_DEPTH


def _repeats(elems, elem_bytes):
    return -(-elems * elem_bytes // REPEAT_BYTES)


def _vector(c, op, repeats):
    """`repeats` of vector instruction `op`, keyed as ascendc/cpu_model counts ours ("<API>/<bytes>...")."""
    c["vector_repeats"] += repeats
    c["vector_ops"][op] = c["vector_ops"].get(op, 0) + repeats


def tasks(shape: Shape):
    """S:91-94, S:135-142: per request ceil(q * N1 / 128) M-tiles of its (token, head) rows, head
    fastest; a short last tile of a long request is moved back to 16 rows. Yields (request, mStart,
    mActual)."""
    rows = shape.q_tokens * shape.heads
    for b in range(shape.batch):
        for i in range(-(-rows // ROW_TILE_M)):
            m_start = i * ROW_TILE_M
            m_actual = min(ROW_TILE_M, rows - m_start)
            if 0 < m_actual < M_ALIGN and m_start >= M_ALIGN:
                m_start -= M_ALIGN - m_actual
                m_actual = M_ALIGN
            yield b, m_start, m_actual


def task_stiles(shape: Shape, m_start, m_actual):
    """S:145-165: the task's visible end is that of its last token; S-tiles computed =
    ceil(visibleEndBlk / 8), S-tiles written = ceil(scoreBlockStride / 8) with the stride the table
    width rounded up to 16 (T:270). Returns (visible blocks, computed S-tiles, all S-tiles)."""
    t_hi = (m_start + m_actual - 1) // shape.heads
    visible = min(shape.visible_blocks(t_hi), shape.blocks)
    stride = shape.width()
    n_all = -(-stride // BLOCKS_PER_STILE)
    return visible, min(-(-visible // BLOCKS_PER_STILE), n_all), n_all


def core_counts(shape: Shape, cores: int):
    """Per-core counters (COUNTERS of ascend_cost, per AI core: its AIC and both AIVs) of one call on
    `cores` AI cores. T:326: blockDim = CalcTschBlockDim(aiv, aic, aiv) = the AIC count; K:142 and K:392:
    task i runs on core i % blockDim (round robin, the same walk on AIC and AIVs)."""
    d = shape.head_dim
    quant = shape.int8
    s_bytes = 4 if quant else 2   # K:56-58 S workspace fp32 for int8 keys, else fp16 (Fixpipe F322F16)
    counts = [dict(mte1_bytes=0, mte2_bytes=0, mte3_bytes=0, fix_bytes=0, fix_gm_bytes=0, cube_fractal_macs=0,
                   vector_repeats=0, vector_ops={}, cross_core_sets=0) for _ in range(cores)]
    flag_count = [dict(aic=0, aiv=0) for _ in range(cores)]  # X:113 / X:124 counters persist over tasks
    for idx, (_, m_start, m_actual) in enumerate(tasks(shape)):
        c = counts[idx % cores]
        fl = flag_count[idx % cores]
        visible, n_comp, n_all = task_stiles(shape, m_start, m_actual)
        m_round = -(-m_actual // M_ALIGN) * M_ALIGN
        # ---- AIC (K:142-166, M:140-268) ----
        if n_comp:
            c["mte2_bytes"] += m_actual * d * 2          # M:159-165 query GM -> L1 once per task
            c["mte1_bytes"] += m_round * d * 2           # M:166-175 query L1 -> L0A once (resident)
        for st in range(n_comp):
            pages = min(BLOCKS_PER_STILE, visible - st * BLOCKS_PER_STILE)  # K:346-349
            c["mte2_bytes"] += pages * 128 * d * 2       # M:178-181 key page GM (or int8 scratch) -> L1, 16-bit
            c["mte1_bytes"] += pages * 128 * d * 2       # M:230 key L1 -> L0B
            c["cube_fractal_macs"] += pages * (m_round // 16) * (128 // 16) * (d // 16)  # M:245
            c["fix_bytes"] += pages * m_actual * 128 * 4  # M:258-266 L0C (fp32) read by FIX
            c["fix_gm_bytes"] += pages * m_actual * 128 * s_bytes
            c["cross_core_sets"] += 1                    # K:163 S-tile ready (mode 2)
            fl["aic"] += 1
            if quant:                                    # K:398-408 int8: AIV0 casts the S-tile's pages
                c["mte2_bytes"] += pages * 128 * d       # K:289 int8 page GM -> UB
                _vector(c, "Cast/2/1", pages * _repeats(128 * d, 2))  # K:295 Cast int8 -> half
                c["mte3_bytes"] += pages * 128 * d * 2   # K:299 half page UB -> GM scratch
                c["cross_core_sets"] += 2 * 2            # K:406-407 barrier (mode 1) + K ready, each AIV
        # ---- AIV x 2 (K:392-421, E:124-450) ----
        sub_m = -(-m_actual // 2)                        # E:126-128 each AIV takes half of the rows
        for sub in range(2):
            m_off = sub * sub_m
            m_sub = 0 if m_off >= m_actual else min(sub_m, m_actual - m_off)
            if m_sub == 0:
                continue
            for st in range(n_all):
                for p0 in range(0, m_sub, ROWS_PER_PASS):
                    rows = min(ROWS_PER_PASS, m_sub - p0)
                    if st < n_comp:
                        c["mte2_bytes"] += rows * STILE_WIDTH * s_bytes          # E:232 / E:285-287
                        if rows < ROWS_PER_PASS:                                 # E:227-230 / E:271-277
                            _vector(c, f"Duplicate/{s_bytes}", _repeats(ROWS_PER_PASS * STILE_WIDTH, s_bytes))
                        if quant:
                            blocks = min(BLOCKS_PER_STILE, visible - st * BLOCKS_PER_STILE)
                            c["mte2_bytes"] += blocks * 128 * 4                  # E:630-650 scales
                            _vector(c, "Mul/4/4", ROWS_PER_PASS * blocks * _repeats(128, 4))  # E:653-656 Mul
                            # E:669-680 SegRowMax: pairwise Max (128 repeats), BlockReduceMax (128),
                            # BlockReduceMax (16), fp32
                            _vector(c, "Max/4/4", ROWS_PER_PASS * BLOCKS_PER_STILE)
                            _vector(c, "BlockReduceMax/4", ROWS_PER_PASS * BLOCKS_PER_STILE
                                    + ROWS_PER_PASS * BLOCKS_PER_STILE // 8)
                        else:
                            # E:689-697 one WholeReduceMax repeat per (row, block) on the fp16 scores, then a
                            # Cast of the maxima to fp32
                            _vector(c, "WholeReduceMax/2", ROWS_PER_PASS * BLOCKS_PER_STILE)
                            _vector(c, "Cast/4/2", _repeats(ROWS_PER_PASS * BLOCKS_PER_STILE, 4))
                    else:
                        _vector(c, "Duplicate/4", _repeats(ROWS_PER_PASS * BLOCKS_PER_STILE, 4))  # E:375 fill
                    _vector(c, "Adds/4/4", rows)                                   # E:417-424 stage Adds
                if st < n_comp:
                    fl["aiv"] += 1
                    if fl["aiv"] % REVERSE_DEPTH == 0:     # X:121-127 every 7th wait sets the reverse flag
                        c["cross_core_sets"] += 1
            c["mte3_bytes"] += m_sub * n_all * BLOCKS_PER_STILE * 4  # E:428-448 score rows, 4 B per block
    return counts


def pages_visible(shape: Shape):
    return sum(task_stiles(shape, m0, m)[0] for _, m0, m in tasks(shape))
