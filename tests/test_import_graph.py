"""The packages' imports run one way: no import cycle among the modules of ms_msa/ and model_zoo/, counting the
imports inside functions too (a lazy import hides a cycle from Python's loader, not from the design).

The graph is read from the sources (ast), not by importing them: an edge A -> B for every `import B`,
`from B import name` and relative form in A, at any depth of A. `from P import m`, where P.m is a module, is an
edge to P.m (not to the package P: a package's __init__ that re-exports its submodules is no cycle).
"""
import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ("ms_msa", "model_zoo")


def modules(root=ROOT, packages=PACKAGES):
    """{dotted module name: (path, is a package __init__)} of every .py file under `packages`."""
    found = {}
    for package in packages:
        for folder, _, files in os.walk(os.path.join(root, package)):
            for name in files:
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    dotted = os.path.relpath(path, root)[:-3].replace(os.sep, ".")
                    is_init = dotted.endswith(".__init__")
                    found[dotted[:-len(".__init__")] if is_init else dotted] = (path, is_init)
    return found


def _targets(module, is_init, node, known):
    """The modules in `known` an import statement of `module` reaches."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        if node.level:
            parts = module.split(".") if is_init else module.split(".")[:-1]
            parts = parts[:len(parts) - (node.level - 1)]
            base = ".".join(parts + ([node.module] if node.module else []))
        else:
            base = node.module
        submodules = [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in known]
        names = submodules + ([base] if len(submodules) < len(node.names) else [])
    out = set()
    for name in names:
        while name and name not in known:          # `import a.b.c` of a name inside a.b: the module a.b
            name = name.rpartition(".")[0]
        if name and name != module:
            out.add(name)
    return out


def import_graph(root=ROOT, packages=PACKAGES):
    """{module: set of the modules it imports} over `packages`, imports at every depth."""
    known = modules(root, packages)
    graph = {}
    for module, (path, is_init) in known.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        graph[module] = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                graph[module] |= _targets(module, is_init, node, known)
    return graph


def cycles(graph):
    """The strongly connected components of `graph` with more than one module (each a sorted list): every
    import cycle lies inside one. Iterative Tarjan."""
    index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycle():
    graph = import_graph()
    found = cycles(graph)
    detail = ["  " + ", ".join(c) + "\n" + "".join(f"    {a} -> {b}\n" for a in c for b in sorted(graph[a]) if b in c)
              for c in found]
    assert not found, "import cycles (each group imports itself round):\n" + "".join(detail)


def test_the_graph_sees_imports_at_every_depth():
    """The check reads what it claims to: module-level, function-level and relative imports are edges."""
    graph = import_graph()
    m3 = "model_zoo.minimax_m3"
    assert f"{m3}.checkpoint.loader" in graph[f"{m3}.model.causal_lm"]          # module level, relative
    assert f"{m3}.serving.run" in graph[f"{m3}.parallel.launch"]                # inside a function
    assert f"{m3}.parallel.rank" in graph[f"{m3}.parallel.launch"]              # `from . import rank`
    assert "ms_msa._lib" in graph["ms_msa.backends.cpu"]


@pytest.mark.parametrize("files, expected", [
    ({"pkg/__init__.py": "", "pkg/a.py": "def f():\n    from . import b\n", "pkg/b.py": "from .a import f\n"},
     [["pkg.a", "pkg.b"]]),
    ({"pkg/__init__.py": "from .a import x\n", "pkg/a.py": "from pkg import b\nx = 1\n", "pkg/b.py": "import os\n"},
     []),
    ({"pkg/__init__.py": "", "pkg/sub/__init__.py": "", "pkg/sub/c.py": "from ..a import y\n",
      "pkg/a.py": "import pkg.sub.c\ny = 0\n"}, [["pkg.a", "pkg.sub.c"]]),
])
def test_cycles_found_in_a_small_tree(tmp_path, files, expected):
    """A cycle through a function-level import, none through a package re-exporting its module, one across
    packages with a relative import."""
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert cycles(import_graph(str(tmp_path), ("pkg",))) == expected
