"""The `prepare` functions of the shipped records (D.prepare = "module:function").

Each is `prepare(out: Path, inputs: Path, args: dict) -> None`: it writes every
instance's agent-side data under `out/data/<instance>/` and its ground truth under
`out/ground_truth/<instance>/`, deterministically from `args` (seeds included) and the
checked source files under `inputs/`. They run at build time only; a package never
imports them."""
