"""Integrations with other frameworks (MindFormers)."""
