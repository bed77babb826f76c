"""One job's page beyond its payload: its encrypted arguments, what middleware did to
it, and its Django Tasks result."""
