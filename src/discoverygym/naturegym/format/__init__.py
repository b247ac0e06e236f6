"""The research-package format every package follows, built or hand-made: its layout and
metadata (`package`), its static check (`check`), its hidden evaluator run under limits
(`evaluator_runner`), uploads (`archives`) and the normalised score g (`scoring`)."""
