"""The verifiers (Prime Intellect, `verifiers.v1`) door, the `[rl]` extra: `taskset`
(the environment), `toolset` (a rollout's tool server), `selection` (the splits),
`launch` and `cli` (local runs). Nothing here imports verifiers until used, so the
`discoverygym` command works without the extra."""
