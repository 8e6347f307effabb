"""The Kubernetes backend of `j0 bench matrix`, and the manifests (the matrix's and deploy/k8s/).

plan (one Indexed Job index per setting and shard), render (the manifests; `j0 deploy render`
writes deploy/k8s/ with it), client (the `kubernetes` client: create, follow, logs), backend
(render, apply, follow, collect), pod (what runs inside the pods:
`python3 -P -m j0.bench.matrix.k8s.pod serve|bench|prefetch`).
"""
