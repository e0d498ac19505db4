"""Small test middlewares, each with one capability (or, for Recording, the two wrappers)."""

from __future__ import annotations

from harness.context import SourcedBlock
from harness.messages import TextBlock


class Marker:
    def __init__(self, name: str) -> None:
        self.name = name


class Recording(Marker):
    """Wraps model and tool calls, logging enter/exit so the nesting is visible."""

    def __init__(self, name: str, log: list[str]) -> None:
        super().__init__(name)
        self.log = log

    def wrap_model_call(self, req, next):
        self.log.append(f"enter:{self.name}")
        response = next(req)
        self.log.append(f"exit:{self.name}")
        return response

    def wrap_tool_call(self, req, next):
        self.log.append(f"enter:{self.name}")
        result = next(req)
        self.log.append(f"exit:{self.name}")
        return result


class OnlyModel(Marker):
    def wrap_model_call(self, req, next):
        return next(req)


class OnlyTool(Marker):
    def wrap_tool_call(self, req, next):
        return next(req)


class Hook(Marker):
    def __init__(self, name: str, log: list[str] | None = None) -> None:
        super().__init__(name)
        self.log = log if log is not None else []

    def before_run(self, state):
        self.log.append(self.name)


class Provides(Marker):
    def __init__(self, name: str, *tools) -> None:
        super().__init__(name)
        self.offered = list(tools)

    def provide_tools(self, state):
        return self.offered


class Contributes(Marker):
    def __init__(self, name: str, *texts: str) -> None:
        super().__init__(name)
        self.texts = texts

    def system_blocks(self, state):
        return [SourcedBlock(part=f"system:{self.name}", block=TextBlock(text=t))
                for t in self.texts]
