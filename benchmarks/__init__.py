"""Benchmarks of resq-nova: ``python -m benchmarks NAME`` (tox -e bench).

Each benchmark prints a readable table and ends with one line holding a JSON
object of its figures. They are not tests: targets are reported, not
asserted.
"""
