"""cg.cuda: clgrad runs on OpenCL devices, never through CUDA, so scripts that choose their
device with `cg.cuda.is_available()` take their CPU branch (which runs on clgrad's default
OpenCL device, a GPU included)."""


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0
