"""NatureGym: building task packages from records, and generating them from simulators."""
