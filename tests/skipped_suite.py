#!/usr/bin/env python3
"""The stand-in for a suite this build could not make: says why and exits 77 (skipped), so that the
suite is named and counted as skipped (tools/run_tests.py, meson test), never left out in silence.

usage: skipped_suite.py REASON
"""
import sys

print("skipped: " + " ".join(sys.argv[1:]))
sys.exit(77)
