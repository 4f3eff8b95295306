"""clgrad's benchmark: `python -m bench` times each workload in clgrad, NumPy and PyTorch eager.

Workloads live in small modules (ops.py, ...), each one function registered with
`@workload`; registry.py holds the decorator, timing.py the clock.
"""
