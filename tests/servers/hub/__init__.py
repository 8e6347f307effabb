"""Our Hugging Face Hub look-alike (server: HubServer) on 127.0.0.1."""
