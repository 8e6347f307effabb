"""`j0 deploy`: the serving manifests of deploy/k8s/, given an owner on the command line.

render (write deploy/k8s/ from overlay/pins.env with j0.kube.serving, on the Kubernetes floor that
the matrix's Kubernetes backend builds its own manifests on).
"""
