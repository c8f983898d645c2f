"""The public methods of :class:`~agentbase.engine.AgentBase`, grouped by area (entries, sessions,
knowledge: graph/lifecycle/scopes/skills/archives, debug). ``AgentBase`` composes them.
"""
