"""Our stand-in of the Kubernetes API (api: K8sApiStandIn) on 127.0.0.1."""
