"""GRAPH_MODE calls of a Cell again, straight into the graph MindSpore compiled for the same arguments.

`Cell.__call__` in GRAPH_MODE spends about 300 µs per call here before the graph runs (and about 600 µs
right after a decode has streamed its keys through the caches): it reads the construct signature anew
(`inspect.signature`), rebuilds the compile arguments and their key, finds the graph already compiled, and
only then runs it. A call whose arguments have the signature (dtype and shape of every Tensor, None in the
same places) of one that already ran, under the same phase, dynamic-shape inputs and jit config, would
find the same graph; `CompiledCalls` remembers that graph's phase and runs it the way MindSpore's own
inference shortcut does (`Cell._predict`, used for the "prefill" / "increment" phases of its LLM serving).

Anything else goes through `Cell.__call__` as before: the first call of a signature, kwargs that do not
bind, arguments that are not Tensors or None (which the Cell then rejects), Parameters, const or
mutable Tensors, PyNative, MS_JIT=0, and MS_DEV_PRECOMPILE_ONLY=1 or a parameter-server scheduler (which run
no graph). These are MindSpore 2.10's executor internals; where they are missing every call takes
`Cell.__call__`.
"""
import os

from mindspore import Parameter, Tensor, context

try:  # pylint: disable=ungrouped-imports
    from mindspore.common.api import _cell_graph_executor
    from mindspore.graph.api import _convert_python_data
    from mindspore.graph.jit_config import _DEFAULT_JIT_CONFIG
    from mindspore.parallel._ps_context import _is_role_sched
    _EXECUTOR = _cell_graph_executor._graph_executor  # pylint: disable=protected-access
    AVAILABLE = (all(hasattr(_EXECUTOR, name) for name in ("get_args_for_run", "set_jit_config"))
                 and hasattr(context, "_get_mode"))
except (ImportError, AttributeError):
    AVAILABLE = False

# Signatures remembered per Cell (a dynamic-shape Cell sees a new one per batch shape); the oldest go first.
SIGNATURES_KEPT = 64


def _signature(args):
    """The arguments' signature, or None if any could make the graph depend on more than dtypes and shapes."""
    sig = []
    for value in args:
        if value is None:
            sig.append(None)
        elif (isinstance(value, Tensor) and not isinstance(value, Parameter)
              and not getattr(value, "const_arg", False) and not getattr(value, "__ms_mutable__", False)
              and not getattr(value, "has_init", False)):
            sig.append((value.dtype, value.shape))
        else:
            return None
    return tuple(sig)


def graph_mode_compiles():
    """Whether a Cell call now compiles a graph (what Cell.__call__ checks first)."""
    return context._get_mode() == context.GRAPH_MODE and os.getenv("MS_JIT") != "0"  # pylint: disable=protected-access


def _graphs_run():
    """Whether a compiled graph is run: not when MindSpore only compiles, nor in a parameter-server scheduler
    (what MindSpore's graph executor checks before it runs one)."""
    return os.getenv("MS_DEV_PRECOMPILE_ONLY") != "1" and not _is_role_sched()


class CompiledCalls:
    """The graphs one Cell's GRAPH_MODE calls compiled, by argument signature.

    Not thread-safe: the owning Cell calls it under its call lock.
    """

    def __init__(self):
        self._phases = {}     # signature -> (real phase, mutable flags)
        self._state = None    # what the phases were compiled under; any change forgets them
        self.direct_calls = 0  # calls that ran a remembered graph (for the tests)

    @staticmethod
    def _state_of(cell):
        return (cell.phase, cell._dynamic_shape_inputs, cell.jit_config_dict)  # pylint: disable=protected-access

    def _same_state(self, cell):
        if self._state is None:
            return False
        phase, dynamic_inputs, jit_config = self._state
        # identities: set_inputs and set_jit_config install new objects
        return (phase == cell.phase and dynamic_inputs is cell._dynamic_shape_inputs  # pylint: disable=protected-access
                and jit_config is cell.jit_config_dict)

    def direct(self, cell, args):
        """A call running the graph compiled for `args`' signature, or None (then call the Cell)."""
        if not self._phases or not graph_mode_compiles() or not _graphs_run():  # (nothing is kept unless AVAILABLE)
            return None
        if not self._same_state(cell):
            self.forget()
            return None
        found = self._phases.get(_signature(args))
        if found is None:
            return None
        phase, mutable = found

        def run():
            run_args = _EXECUTOR.get_args_for_run(cell, args, {}, list(mutable), [], False, False)
            _EXECUTOR.set_jit_config(cell.jit_config_dict or _DEFAULT_JIT_CONFIG)
            out = _convert_python_data(_EXECUTOR(tuple(run_args), phase))
            self.direct_calls += 1
            return out
        return run

    def remember(self, cell, args):
        """After `cell(*args)` ran through Cell.__call__ in GRAPH_MODE: keep the phase it compiled."""
        if not AVAILABLE or not graph_mode_compiles():
            return
        sig = _signature(args)
        phase = cell.phase_cache.get(cell.phase)
        mutable = cell._has_mutable_args_list  # pylint: disable=protected-access
        if sig is None or phase is None or cell.sequence_modified or mutable is None or any(mutable):
            return
        if not self._same_state(cell):
            self.forget()
            self._state = self._state_of(cell)
        if len(self._phases) >= SIGNATURES_KEPT:
            del self._phases[next(iter(self._phases))]
        self._phases[sig] = (phase, tuple(mutable))

    def forget(self):
        self._phases.clear()
        self._state = None
