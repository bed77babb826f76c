"""The overview page's read models: the numbers, the red flags and the failover panel."""
