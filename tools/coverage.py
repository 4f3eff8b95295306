"""How much of PyTorch's public API clgrad has: names in torch.*, Tensor.*, torch.nn.functional.*,
torch.nn.* (layer and loss classes), torch.nn.utils(.rnn).*, torch.linalg, torch.special,
torch.distributions, torch.testing and torch.random, each looked up on clgrad's matching
namespace.

    python tools/coverage.py            # writes docs/coverage.md
    python tools/coverage.py --check    # exits 1 if docs/coverage.md is out of date

PyTorch's lists come from the installed torch (the test extra pins it). Names that belong to
features clgrad does not have by design (CUDA, sparse and quantized tensors, storages, named
tensors, TorchScript plumbing) are left out of the denominators, by the rules below.
"""
from __future__ import annotations

import argparse
import inspect
import re
import sys
from pathlib import Path

import torch
import torch.distributions
import torch.linalg
import torch.nn
import torch.nn.functional
import torch.nn.utils.rnn
import torch.random
import torch.special
import torch.testing

import clgrad
import clgrad.distributions
import clgrad.nn
import clgrad.nn.functional
import clgrad.nn.utils.rnn

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "coverage.md"

# Names that are about hardware, formats or machinery clgrad does not offer, in any namespace.
_OUT_OF_SCOPE = re.compile(
    r"cuda|cudnn|mkldnn|miopen|fbgemm|mps|xpu|ipu|hpu|mtia|vulkan|nested|"
    r"sparse|coalesce|csr|csc|bsr|bsc|crow|ccol|_nnz|"
    r"quantiz|q_|qscheme|int_repr|fake_quant|"
    r"storage|data_ptr|pin_memory|is_pinned|record_stream|share_memory|is_shared|"
    r"refine_names|rename|align_|has_names|^names$|"
    r"^is_meta$|dlpack|is_inference|_version|grad_fn|register_post_accumulate|"
    r"^set_$|^resize|^as_subclass|^new$|^module_load|smm$|sspaddmm|^dense_dim|^sparse_dim|"
    r"^indices$|^values$|^row_indices|^col_indices|^to_padded_tensor|"
    r"^complex$|view_as_complex|polar|^view_as_real|"
    r"_jit|^jit$|^compile|^export|^fx$|^onnx|^package|^profiler|^autocast|^amp$")

# torch.nn.functional's module-level helpers that are not functions of the API.
_FUNCTIONAL_PLUMBING = {"boolean_dispatch", "handle_torch_function", "has_torch_function",
                        "has_torch_function_unary", "has_torch_function_variadic",
                        "assert_int_or_pair"}


def _public(namespace) -> list[str]:
    return sorted(n for n in dir(namespace) if not n.startswith("_") and not _OUT_OF_SCOPE.search(n))


def _functions(namespace, home: str | None = None) -> list[str]:
    """Public callables that are functions, not classes, modules or typing helpers."""
    names = []
    for name in _public(namespace):
        obj = getattr(namespace, name)
        if inspect.isclass(obj) or inspect.ismodule(obj) or not callable(obj):
            continue
        module = getattr(obj, "__module__", "") or ""
        if module.startswith(("typing", "torch._jit_internal", "torch.overrides")):
            continue
        names.append(name)
    return names


def torch_functions() -> list[str]:
    return _functions(torch)


def tensor_methods() -> list[str]:
    return _public(torch.Tensor)


def functional_functions() -> list[str]:
    return [n for n in _functions(torch.nn.functional) if n not in _FUNCTIONAL_PLUMBING]


def nn_modules() -> list[str]:
    return [n for n in _public(torch.nn) if inspect.isclass(getattr(torch.nn, n))
            and issubclass(getattr(torch.nn, n), torch.nn.Module)
            and not n.startswith("Lazy")]       # shape-inferring twins of the layers


def declared(module):
    """A module's own __all__ (torch.nn.utils also imports helpers it does not offer)."""
    return lambda: sorted(module.__all__)


def functions_in_scope(module):
    """A module's functions without those out of scope (torch.linalg's eig and eigvals need
    complex numbers)."""
    return lambda: [n for n in _functions(module) if n not in _NEEDS_COMPLEX]


_NEEDS_COMPLEX = {"eig", "eigvals"}


SECTIONS = [
    ("torch.nn.functional", functional_functions, clgrad.nn.functional, "cg.nn.functional"),
    ("torch.nn (layers and losses)", nn_modules, clgrad.nn, "cg.nn"),
    ("torch.nn.utils", declared(torch.nn.utils), clgrad.nn.utils, "cg.nn.utils"),
    ("torch.nn.utils.rnn", declared(torch.nn.utils.rnn), clgrad.nn.utils.rnn,
     "cg.nn.utils.rnn"),
    ("Tensor methods", tensor_methods, None, "cg.Tensor"),
    ("torch.* functions", torch_functions, clgrad, "cg"),
    ("torch.linalg", functions_in_scope(torch.linalg), clgrad.linalg, "cg.linalg"),
    ("torch.special", declared(torch.special), clgrad.special, "cg.special"),
    ("torch.distributions", declared(torch.distributions), clgrad.distributions,
     "cg.distributions"),
    ("torch.testing", functions_in_scope(torch.testing), clgrad.testing, "cg.testing"),
    ("torch.random", lambda: ["default_generator", "fork_rng", "get_rng_state", "initial_seed",
                              "manual_seed", "seed", "set_rng_state"], clgrad.random,
     "cg.random"),
]


def coverage() -> list[tuple[str, str, list[str], list[str]]]:
    rows = []
    for title, names_of, ours, spelled in SECTIONS:
        ours = clgrad.ones(1) if ours is None else ours    # attributes set per tensor count too
        names = names_of()
        present = set(dir(ours))            # dir: no property is evaluated
        missing = [n for n in names if n not in present]
        rows.append((title, spelled, names, missing))
    return rows


def render(rows) -> str:
    lines = [
        "# PyTorch API coverage",
        "",
        f"Written by `python tools/coverage.py` against PyTorch {torch.__version__.split('+')[0]}:"
        " each public name of PyTorch's namespace looked up on clgrad's. Names of features",
        "clgrad does not have by design (CUDA, sparse and quantized tensors, storages, named",
        "tensors, complex numbers, TorchScript) are not counted; the rules are in the script.",
        "A name counts as present when clgrad defines it; its tests say whether it is right.",
        "",
        "| namespace | clgrad | present | of | coverage |",
        "|---|---|---:|---:|---:|",
    ]
    for title, spelled, names, missing in rows:
        have = len(names) - len(missing)
        lines.append(f"| {title} | `{spelled}` | {have} | {len(names)} | "
                     f"{100 * have / max(len(names), 1):.0f}% |")
    for title, spelled, names, missing in rows:
        lines += ["", f"## Missing from `{spelled}` ({len(missing)})", ""]
        lines.append(", ".join(f"`{n}`" for n in missing) if missing else "Nothing.")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if docs/coverage.md differs from what would be written")
    args = parser.parse_args(argv)
    text = render(coverage())
    if args.check:
        current = DOC.read_text() if DOC.exists() else ""
        if current != text:
            print(f"{DOC} is out of date: run python tools/coverage.py", file=sys.stderr)
            return 1
        return 0
    DOC.parent.mkdir(exist_ok=True)
    DOC.write_text(text)
    for title, _, names, missing in coverage():
        print(f"{title}: {len(names) - len(missing)}/{len(names)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
