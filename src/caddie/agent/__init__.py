"""The agent loop (a function that emits events) and the stateful Agent around it."""
