"""Development tools, apart from the product: the conformance runner, differential runs
against the reference tools, reference-tool discovery, the P4Runtime bindings generator
and a small P4Runtime client for tests and benchmarks."""
