"""Every environment knob of clgrad, read once at import into one typed `config` object.

    CLGRAD_DEBUG      int   0  1 kernel runs (name, global size, time), 2 + schedule, 3 + IR,
                               4 + OpenCL source
    CLGRAD_DUMP       dir      write every compiled kernel source to <dir>/<name>.cl
    CLGRAD_DEVICE     spec     default device: "cpu", "gpu", "cpu:intel", "cpu:pocl" or "cl:P:D"
    CLGRAD_CACHE      bool  1  "0" turns the on-disk program cache off
    CLGRAD_CACHE_DIR  dir      default $XDG_CACHE_HOME/clgrad, else ~/.cache/clgrad
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator, Mapping

_FALSE_WORDS = {"0", "false", "no", "off", ""}


def _default_cache_dir(env: Mapping[str, str]) -> str:
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "clgrad")


def _env_int(env: Mapping[str, str], name: str, default: int) -> int:
    text = env.get(name, "").strip()
    if not text:
        return default
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{name}={text!r} is not an integer") from None


@dataclasses.dataclass
class Config:
    DEBUG: int = 0
    DUMP: str | None = None
    DEVICE: str | None = None
    CACHE: bool = True
    CACHE_DIR: str = dataclasses.field(default_factory=lambda: _default_cache_dir(os.environ))

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> Config:
        return cls(
            DEBUG=_env_int(env, "CLGRAD_DEBUG", 0),
            DUMP=env.get("CLGRAD_DUMP") or None,
            DEVICE=env.get("CLGRAD_DEVICE") or None,
            CACHE=env.get("CLGRAD_CACHE", "1").strip().lower() not in _FALSE_WORDS,
            CACHE_DIR=env.get("CLGRAD_CACHE_DIR") or _default_cache_dir(env),
        )

    @contextlib.contextmanager
    def override(self, **fields: object) -> Iterator[Config]:
        """Set some fields for the duration of a `with` block, then restore them."""
        known = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(fields) - known)
        if unknown:
            raise TypeError(f"config.override: unknown field(s) {unknown}; known: {sorted(known)}")
        saved = {name: getattr(self, name) for name in fields}
        for name, value in fields.items():
            setattr(self, name, value)
        try:
            yield self
        finally:
            for name, value in saved.items():
                setattr(self, name, value)


config = Config.from_env()
