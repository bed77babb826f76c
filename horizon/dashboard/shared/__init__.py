"""Helpers every page family uses: how times and counts read, paging over ranges,
masking, row links, and the 503 page when Redis is away (pure where they can be)."""
