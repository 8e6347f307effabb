"""Our vLLM stand-in (server: VllmStandIn) on 127.0.0.1, in vLLM 0.33's wire format;
hostile_routes and hostile_server are its hostile answers."""
