"""MSA in MindFormers 2.1.0: config keys, registry entries and a GPTModel layer spec, import-guarded.

    from model_zoo.minimax_m3.integrations import mindformers_adapter as mfa
    if mfa.MINDFORMERS_AVAILABLE:
        spec = mfa.get_msa_layer_spec(transformer_config)   # transformer_config may carry msa_* keys
        model = GPTModel(transformer_config, spec, vocab_size, max_sequence_length)

This module always imports. When MindFormers does not, MINDFORMERS_AVAILABLE is False and
MINDFORMERS_IMPORT_ERROR says why; MsaCoreAttention (which needs no MindFormers) is still here.
MindFormers writes its logs under ./output unless LOCAL_DEFAULT_PATH is set before it is imported.

Registered on import (MindFormerRegister):
  * CONFIG "MiniMaxM3MsaConfig" (search name "minimax_m3_msa"), under both the legacy and the mcore
    ("mcore_" prefixed) names, so it is found whichever `use_legacy` the MindFormers context has;
  * MODULES "MsaSelfAttention" and "MsaCoreAttention";
  * the whole model: CONFIG "MiniMaxM3MFConfig" and MODELS "MiniMaxM3ForCausalLM" (class MiniMaxM3MFForCausalLM),
    search name "minimax_m3", legacy and mcore names: model_zoo's MiniMaxM3ForCausalLM behind MindFormers'
    config / model interface, built from a checkpoint folder (``MiniMaxM3MFForCausalLM.from_checkpoint(dir)``).
"""
from .mf_core_attention import MsaCoreAttention

MINDFORMERS_AVAILABLE = False
MINDFORMERS_IMPORT_ERROR = None
M3_MODEL_IMPORT_ERROR = None

try:
    from mindformers.tools.register import MindFormerModuleType, MindFormerRegister
    from ._mindformers_layers import (MSA_DEFAULTS, MiniMaxM3MsaConfig, MsaSelfAttention,
                                      MsaSelfAttentionSubmodules, get_msa_layer_spec, msa_settings)
except Exception as err:  # noqa: BLE001 - any failure to import MindFormers means "not available"
    MINDFORMERS_IMPORT_ERROR = f"{type(err).__name__}: {err}"
else:
    MINDFORMERS_AVAILABLE = True
    for _legacy in (True, False):
        MindFormerRegister.register_cls(MiniMaxM3MsaConfig, MindFormerModuleType.CONFIG, legacy=_legacy,
                                        search_names="minimax_m3_msa")
    MindFormerRegister.register_cls(MsaSelfAttention, MindFormerModuleType.MODULES)
    MindFormerRegister.register_cls(MsaCoreAttention, MindFormerModuleType.MODULES)
    # The whole model imports model_zoo's model and loader too: its own guard, so a break there shows up as
    # M3_MODEL_IMPORT_ERROR (the tests fail on it) and never as "MindFormers unavailable".
    try:
        from ._mindformers_m3 import MiniMaxM3MFConfig, MiniMaxM3MFForCausalLM
    except Exception as err:  # noqa: BLE001
        M3_MODEL_IMPORT_ERROR = f"{type(err).__name__}: {err}"
    else:
        for _legacy in (True, False):
            MindFormerRegister.register_cls(MiniMaxM3MFConfig, MindFormerModuleType.CONFIG, legacy=_legacy,
                                            search_names="minimax_m3")
            MindFormerRegister.register_cls(MiniMaxM3MFForCausalLM, MindFormerModuleType.MODELS, legacy=_legacy,
                                            alias="MiniMaxM3ForCausalLM", search_names="minimax_m3")

__all__ = ["MINDFORMERS_AVAILABLE", "MINDFORMERS_IMPORT_ERROR", "M3_MODEL_IMPORT_ERROR", "MsaCoreAttention"]
if MINDFORMERS_AVAILABLE:
    __all__ += ["MSA_DEFAULTS", "MiniMaxM3MsaConfig", "MsaSelfAttention", "MsaSelfAttentionSubmodules",
                "get_msa_layer_spec", "msa_settings"]
if MINDFORMERS_AVAILABLE and M3_MODEL_IMPORT_ERROR is None:
    __all__ += ["MiniMaxM3MFConfig", "MiniMaxM3MFForCausalLM"]
