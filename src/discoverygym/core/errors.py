"""Exceptions shared by the contract. Agents never see these raised: `Episode.call`
turns them into error results."""


class DiscoveryGymError(Exception):
    """Base class for the package's own errors."""


class ToolInputError(DiscoveryGymError):
    """The agent's arguments were wrong. The message is written for the agent: what
    was wrong and what is allowed. Raising it charges nothing."""


class EpisodeFinished(DiscoveryGymError):
    """A tool was called after the episode ended."""


class AgentNotApplicable(DiscoveryGymError, RuntimeError):
    """Raised by a scripted agent, before it acts, for an episode it was not built for
    (a baseline of one world given another). The record is a failure that says so, and
    `discoverygym calibrate` leaves the agent out of that task instead of counting a
    0 it never played for."""


class UnknownName(DiscoveryGymError, KeyError):
    """A suite, task, world, agent or option that does not exist."""

    def __str__(self) -> str:  # KeyError quotes its message; we want it plain
        return str(self.args[0]) if self.args else ""
