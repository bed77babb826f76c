"""Who may use the dashboard: the decorator every view wears, and roles from group names."""
