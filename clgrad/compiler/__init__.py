"""clgrad.compiler."""
