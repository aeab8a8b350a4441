"""The tree reads like the data flow: the import-linter layers contract holds, and no module
imports itself through others (no import cycle, even through imports inside functions)."""

import shutil
import subprocess
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _cycles(graph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    adj = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in graph.modules}

    def visit(root: str) -> None:
        work = [(root, iter(adj[root]))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in adj:
                    continue
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(adj[child])))
                    break
                if child in on:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        m = stack.pop()
                        on.discard(m)
                        comp.append(m)
                        if m == node:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))

    for m in sorted(adj):
        if m not in index:
            visit(m)
    return out


def test_tarjan_finds_a_planted_cycle():
    class Fake:
        modules = {"a", "b", "c", "d"}
        edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}

        def find_modules_directly_imported_by(self, m):
            return self.edges[m]

    assert _cycles(Fake()) == [["a", "b", "c"]]


def test_no_import_cycle_in_the_package():
    graph = grimp.build_graph("unmix", exclude_type_checking_imports=True)
    # a package's __init__ re-exporting its own submodules is not a cycle of the data flow
    cycles = [
        c for c in _cycles(graph) if not all(m == c[0] or m.startswith(c[0] + ".") for m in c)
    ]
    assert cycles == []


@pytest.mark.skipif(shutil.which("lint-imports") is None, reason="import-linter not installed")
def test_layers_contract_is_kept():
    run = subprocess.run(
        ["lint-imports"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 kept, 0 broken" in run.stdout
