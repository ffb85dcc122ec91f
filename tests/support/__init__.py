"""Test support shared by the tests and the benchmarks: synthetic bundles (all written through
the product's own BundleWriter, so a fixture has the layout of a real capture), free ports,
and the check that a test session leaves the machine as it found it."""
