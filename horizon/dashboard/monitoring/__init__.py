"""The watched tags' pages: each job's state on a tag's page."""
