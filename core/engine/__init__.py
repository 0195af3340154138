"""How a run unfolds: the event loop that offers each request to an allocator and checks what it returns
(`simulation`), the builders whose steps allocators and the RL environments share (`pool`, `jobs`), routing
(`routing`) and the packet model of jobs (`qos`). Imports the model only."""
