"""`j0 deploy`: the serving manifests of deploy/k8s/, given an owner on the command line.

render (write deploy/k8s/ from overlay/pins.env with j0.bench.matrix.k8s.render, the renderer the
matrix's Kubernetes backend uses for its own manifests).
"""
