"""The kube floor: the Kubernetes objects j0 writes, shared by `j0 deploy render` and the matrix.
objects (labels, environment, probes, the PVC, the pod spec, YAML), hardening (the restricted
pod security settings), literal (container values escaped against $(VAR) expansion, repo ids
checked) and serving (the article's server: PVC, Deployment, Service)."""
