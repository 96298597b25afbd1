"""Helpers shared by the tests, the demo and the benchmarks: dtype rounding, the case matrix, the numerical
acceptance rule of SPEC §6, and the checks the CPU kernel tests share."""
