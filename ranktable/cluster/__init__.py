"""The cluster adapter: jobs, pods, logs, events and the switch tree over the Kubernetes REST API.

``transport`` (the kubeconfig read, requests through urllib3), ``kube`` (an API client per kubeconfig,
timeouts, errors, resumable watch), ``client`` (submit, stop, resubmit, describe, wait for the rank
table), ``logs``, ``describe`` and ``results`` (what the calls return) and ``topology_source`` (the switch
tree from HyperNodes, basic-tor-node-cm or node labels).
"""
