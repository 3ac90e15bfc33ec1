"""A third-party estimator in one module: one cycle per iteration of an innermost loop.

A lower bound for a single-issue datapath that retires one innermost iteration per cycle.
It walks the kernel's loop tree the way every estimator has to: a loop runs its trips once
per iteration of the loop around it (trips multiply down a nest), and loop nests that sit
side by side run one after the other (their iterations add). On PolyBench 2mm (``k2mm``:
two nests of three loops, 16x18x22 and 16x24x18 iterations) that is 6,336 + 6,912 = 13,248,
not the product of all six trip counts.

Install it as a plugin with an entry point in your package's ``pyproject.toml``::

    [project.entry-points.llmulator]
    my_estimator = "my_estimator"

(docs/plugins.md; tests/test_api_docs.py runs this file on k2mm and compares each loop's
iterations with what hlsim counts when it runs the kernel.)
"""

from llmulator.hookspecs import hookimpl
from llmulator.results import Estimate


def loop_iterations(design):
    """Total iterations of every loop of the design's kernel, by label."""
    out = {}

    def walk(nodes, entries):  # entries: how many times control reaches these nodes
        for node in nodes:
            if node.kind == "loop":
                out[node.label] = entries * design.trips(node.label)  # trips per entry x entries
                walk(node.body, out[node.label])  # its body runs once per iteration
            elif node.kind == "branch":
                p, _note = design.branch_probability(node)  # how often the condition holds
                walk(node.then, entries * p)
                walk(node.orelse, entries * (1 - p))

    walk(design.tree.roots, 1.0)  # the top level: sibling nests, each entered once
    return out


class MyEstimator:
    """One cycle per innermost iteration."""

    name = "my-estimator"
    version = "0.1.0"

    def available(self):
        return None  # or a one-line reason, e.g. "checkpoint not found"

    def estimate(self, designs):
        out = []
        for d in designs:  # batched: one call, many designs
            iterations = loop_iterations(d)
            innermost = [label for label, loop in d.tree.loops.items()
                         if not any(n.kind == "loop" for n in loop.descendants())]
            cycles = sum(iterations[label] for label in innermost)
            out.append(Estimate(self.name, self.version, {"cycles": cycles}, confidence={"cycles": 0.5},
                                design=d.name))
        return out


@hookimpl
def register_estimators(register):
    register(MyEstimator)
