"""What the workers run now, as their heartbeats publish it (Workers and Running pages)."""
