"""The ground floor: small tools every room of labkit uses; nothing here imports labkit."""

__all__ = ["jsonio", "net", "numeric", "proc", "stats", "stdio", "tables", "tempdirs"]
