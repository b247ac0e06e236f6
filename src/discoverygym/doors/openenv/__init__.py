"""The OpenEnv door (the `[openenv]` extra, in an environment of its own): a suite served
as an OpenEnv environment, `discoverygym serve openenv SUITE` (server.py; bounds.py reads
what a client sends; cli.py mounts the command)."""
