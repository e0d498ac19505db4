"""The API's routes, grouped as the API groups them; each declared once for both clients."""

from hango_client.resources.admin import Account, Credentials, McpServers, Skills, Webhooks
from hango_client.resources.context import Context, Prices, Schedules, Usage
from hango_client.resources.conversations import Agents, Runs, Sessions

__all__ = ["Account", "Agents", "Context", "Credentials", "McpServers", "Prices", "Runs",
           "Schedules", "Sessions", "Skills", "Usage", "Webhooks"]
