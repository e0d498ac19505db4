"""The API's routes, grouped as the API groups them; each declared once for both clients."""

from hango_client.resources.admin import Account, Credentials, McpServers, Skills, Webhooks
from hango_client.resources.context import Context, Prices, Schedules, Usage
from hango_client.resources.conversations import Agents, Runs, Sessions
from hango_client.resources.evals import EvalCases, EvalRuns, Evals, EvalSuites

__all__ = ["Account", "Agents", "Context", "Credentials", "EvalCases", "EvalRuns", "EvalSuites",
           "Evals", "McpServers", "Prices", "Runs", "Schedules", "Sessions", "Skills", "Usage",
           "Webhooks"]
