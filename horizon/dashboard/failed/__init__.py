"""The failed list and what an operator does to it: bounded queries, bulk actions,
edit-and-retry with its diff, and the retries kept in a job's timeline."""
