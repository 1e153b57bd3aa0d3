"""HCCL collectives on the switch tree (pure core): algorithm steps, HCCL_ALGO choice, step costs, groups."""
