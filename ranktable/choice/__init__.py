"""The choice layer above the pure planner: the HCCL cost model that judges server orders (`cost`), the
group-aware order choice built on it (`order_choice`) and the launcher's route plan (`routing`).

They sit above `plan/` so the planner never imports what judges it: no arrow runs back up.
"""
