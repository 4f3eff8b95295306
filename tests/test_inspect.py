"""What users see of the compiler: cg.compile, cg.ir, cg.viz, CLGRAD_DEBUG and CLGRAD_DUMP."""
import os
import subprocess
import sys

import pytest

import clgrad as cg
from clgrad.compiler import ir as cir

SCRIPT = "import clgrad as cg; x = cg.ones(40, 50); print((x.exp() * 3).sum(1).numpy()[0])"


def test_compile_lists_kernels_with_source_and_ir():
    x = cg.randn(37, 50)
    schedule = cg.compile(x.softmax(-1), (x * 2).sum())
    assert len(schedule) == 2
    for kernel in schedule:
        assert f"void {kernel.name}(" in kernel.source and "__kernel " in kernel.source
        assert kernel.ir.rstrip().splitlines()[-1].startswith("return %")
    assert schedule[0].name.startswith("R_37x50")
    assert x.node.op is cir.Op.BUFFER          # compiling ran nothing


def test_compile_is_deterministic():
    x = cg.randn(37, 50)
    assert cg.compile(x.exp() + 1)[0].source == cg.compile(x.exp() + 1)[0].source


def test_ir_dump_parses_back_to_the_same_graph(capsys):
    x = cg.randn(4, 6)
    y = (x.permute(1, 0) * 2).sum(0)
    text = cg.ir.dump(y)
    assert text == capsys.readouterr().out
    assert "%0 = buffer" in text and "sum" in text and "permute" in text
    (parsed,) = cg.ir.parse(text)
    assert cir.Node is type(parsed) and parsed.shape == y.shape and parsed.op is cir.Op.RESHAPE


def test_viz_writes_dot_with_one_cluster_per_kernel(tmp_path):
    x = cg.randn(37, 50)
    y = (x @ x.T).exp().sum(0)          # the matmul, then a reduction of its exp
    path = cg.viz(y, path=str(tmp_path / "g.dot"))
    text = open(path).read()
    assert text.startswith("digraph") and text.count("subgraph cluster_") == 2


def _run(env_extra, tmp_path):
    env = dict(os.environ, **env_extra)
    return subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                          text=True, cwd=tmp_path, check=True)


def test_debug_ladder_and_dump(tmp_path):
    out = _run({"CLGRAD_DEBUG": "4", "CLGRAD_DUMP": str(tmp_path / "k")}, tmp_path)
    assert "*** R_40x50" in out.stdout + out.stderr          # level 1: each kernel run
    assert "schedule: 1 kernel" in out.stderr               # level 2
    assert "= exp %" in out.stderr                          # level 3: IR
    assert "void R_40x50" in out.stderr and "__kernel " in out.stderr     # level 4: source
    dumped = os.listdir(tmp_path / "k")
    assert len(dumped) == 1 and dumped[0].startswith("R_40x50") and dumped[0].endswith(".cl")
    quiet = _run({}, tmp_path)
    assert quiet.stderr == "" and float(quiet.stdout) > 0


def test_debug_prints_the_ir_of_a_kernel_that_fails_to_lower(monkeypatch, capsys):
    from clgrad.config import config
    from clgrad.engine import plan

    def crash(spec, target):
        raise AssertionError("a lowering bug")
    monkeypatch.setattr(plan, "lowered", crash)
    x = cg.randn(7, 9)
    with config.override(DEBUG=2), pytest.raises(AssertionError, match="a lowering bug"):
        (x * 3 + 1).exp().realize()
    err = capsys.readouterr().err
    assert "lowering failed for the kernel of IR:" in err and "= exp %" in err
