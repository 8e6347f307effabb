"""Small real servers of ours that tests run real clients against (127.0.0.1 only): stand-ins for
the Hugging Face Hub (hub/server.py), a Docker registry (registry_server.py), vLLM's API server
(vllm/server.py) and the Kubernetes API (k8s/api.py), on the shared base of base.py."""
