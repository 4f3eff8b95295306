"""The shape of the package: which layer imports which, and how big a module may grow."""
import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "clgrad"
LAYERS = ("distributions", "distributed", "nn", "optim", "frontend", "engine", "compiler",
          "runtime")
# what each layer may import from clgrad; `config` is the one module of environment knobs
ALLOWED = {
    "compiler": {"compiler"},
    "runtime": {"runtime", "config"},
    "engine": {"engine", "compiler", "runtime", "config"},
    "frontend": {"frontend", "engine", "compiler", "runtime", "config"},
    "nn": {"nn", "frontend", "compiler", "distributed"},
    "distributed": {"distributed", "frontend"},
    "optim": {"optim", "frontend", "compiler"},
    "distributions": {"distributions", "frontend", "nn"},
}


def modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path, ast.parse(path.read_text(), str(path))


def layer_of(path: Path) -> str | None:
    parts = path.relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 and parts[0] in LAYERS else None


def imported(path: Path, tree: ast.AST):
    """(clgrad module path as a tuple, names imported from it) for every import of clgrad."""
    here = path.relative_to(PACKAGE).parts[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - node.level + 1]
                target = base + tuple(node.module.split(".")) if node.module else base
            elif node.module and node.module.split(".")[0] == "clgrad":
                target = tuple(node.module.split(".")[1:])
            else:
                continue
            names = [alias.name for alias in node.names]
            if not node.module or node.level and target == base:
                for name in names:      # `from . import x` / `from .. import engine`
                    yield target + (name,), []
            else:
                yield target, names
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "clgrad":
                    yield tuple(alias.name.split(".")[1:]), []


@pytest.mark.parametrize("path,tree", list(modules()), ids=lambda v: getattr(v, "name", ""))
def test_each_layer_imports_only_the_layers_below(path, tree):
    layer = layer_of(path)
    if layer is None:
        return
    for target, _ in imported(path, tree):
        other = target[0] if target else ""
        assert other in ALLOWED[layer], f"{path.name} ({layer}) imports clgrad.{'.'.join(target)}"


def test_nn_and_optim_use_the_ir_through_its_public_operators():
    for path, tree in modules():
        if layer_of(path) not in ("nn", "optim", "distributions"):
            continue
        for target, names in imported(path, tree):
            assert target[:1] != ("engine",) and target[:1] != ("runtime",), path.name
            private = [n for n in names if n.startswith("_")]
            assert not private, f"{path.name} imports private names {private} from {target}"
        built = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Call)
                 and getattr(node.func, "id", getattr(node.func, "attr", "")) == "Node"]
        assert not built, f"{path.name} builds IR nodes by hand at lines {built}"


def test_no_module_is_over_500_lines():
    lengths = {path.relative_to(PACKAGE).as_posix(): len(path.read_text().splitlines())
               for path in PACKAGE.rglob("*.py")}
    assert not {name: n for name, n in lengths.items() if n > 500}
