"""Horizon's process tree: master (one per host) -> supervisors -> pools -> worker processes."""
