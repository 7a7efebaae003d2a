"""Tests of the point-cloud domain."""
