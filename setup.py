"""The optional C part of the scan (ctxtool/_scan.c): built where a compiler and the Python headers are,
left out otherwise (ctxtool then reads every line in Python, with the same results)."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("ctxtool._scan", ["ctxtool/_scan.c"], depends=["ctxtool/_scan_entry.c", "ctxtool/_scan_codex.c", "ctxtool/_scan_claude.c", "ctxtool/_scan_pi.c", "ctxtool/_scan_tally.c", "ctxtool/_scan_validate.c", "ctxtool/_scan_pair.c", "ctxtool/_scan_profile.c", "ctxtool/_scan_sniff.c"], optional=True, extra_compile_args=["-O2"])])
