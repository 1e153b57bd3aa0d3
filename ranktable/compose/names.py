"""The names a composed job's objects carry that readers of the cluster need (the rank-table ConfigMap's
name and key, the NPU resource, the routing switch), apart from the composer: `ranktable job list` reads
them without importing the JobSpec, its validators and YAML's dumper (#28)."""

from __future__ import annotations

NPU_RESOURCE = "huawei.com/ascend-1980"
CONFIGMAP_PREFIX = "configmap1980-"
RANK_TABLE_KEY = "jobstart_hccl.json"
ROUTE_ENV = "ROUTE_PLAN"


def configmap_name(job_name: str) -> str:
    return CONFIGMAP_PREFIX + job_name
