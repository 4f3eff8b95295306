"""Every kernel the test suite compiles, written out for comparison: a refactor that must not
change generated code compares a dump made before it with one made after.

    python tools/kernel_dump.py DIR [pytest args...]   # run the suite, kernels into DIR
    python tools/kernel_dump.py --compare DIR1 DIR2    # the kernels that differ, if any

Kernel names carry a hash of their source, so equal dumps hold the same file names. Python's
garbage collector is held back during each test and run after it: a constant realized in a
reference cycle could otherwise be read from a buffer in one run and inlined in the next.
"""
from __future__ import annotations

import argparse
import filecmp
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def dump(folder: str, pytest_args: list[str]) -> int:
    env = dict(os.environ, CLGRAD_DUMP=os.path.abspath(folder),
               CLGRAD_CACHE_DIR=tempfile.mkdtemp(prefix="clgrad-dump-cache-"),
               PYTHONPATH=os.pathsep.join(filter(None, [HERE, os.environ.get("PYTHONPATH")])))
    command = [sys.executable, "-m", "pytest", "-q", "-p", "collect_between_tests",
               *pytest_args]
    return subprocess.call(command, env=env, cwd=os.path.dirname(HERE))


def compare(first: str, second: str) -> int:
    a, b = set(os.listdir(first)), set(os.listdir(second))
    only = sorted(a ^ b)
    changed = [name for name in sorted(a & b)
               if not filecmp.cmp(os.path.join(first, name), os.path.join(second, name),
                                  shallow=False)]
    for name in only:
        print(f"only in {first if name in a else second}: {name}")
    for name in changed:
        print(f"differs: {name}")
    print(f"{len(a & b) - len(changed)} identical, {len(changed)} differ, {len(only)} in one only")
    return 1 if only or changed else 0


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Dump every kernel the test suite compiles, or compare two dumps.",
        epilog="Arguments after FOLDER go to pytest (e.g. tests/test_ops_matmul.py -k sole).")
    parser.add_argument("--compare", nargs=2, metavar=("DIR1", "DIR2"),
                        help="list the kernels that differ between two dumps")
    parser.add_argument("folder", nargs="?", metavar="FOLDER",
                        help="where the kernels go (made if missing)")
    parser.add_argument("pytest_args", nargs=argparse.REMAINDER, metavar="PYTEST_ARGS")
    args = parser.parse_args(argv)
    if args.compare and (args.folder or args.pytest_args):
        parser.error("--compare takes two folders and nothing else")
    if not args.compare and not args.folder:
        parser.error("give a FOLDER to dump into, or --compare DIR1 DIR2")
    if args.folder and args.folder.startswith("-"):
        # (an option given after `--`: a mistyped flag, not a folder to fill with kernels)
        parser.error(f"FOLDER {args.folder!r} looks like an option")
    return args


def main(argv: list[str]) -> int:
    args = parse(argv)
    if args.compare:
        return compare(*args.compare)
    return dump(args.folder, args.pytest_args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
