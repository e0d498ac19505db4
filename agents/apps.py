from django.apps import AppConfig


class AgentsConfig(AppConfig):
    name = "agents"
    verbose_name = "Agents"

    def ready(self) -> None:
        from agents import mcp_servers
        from integrations import references

        # A server an agent names keeps its name, and leaves the agent when it is deleted.
        references.register("agents", mcp_servers.users, mcp_servers.detach)
