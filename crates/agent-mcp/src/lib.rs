//! # agent-mcp — being written (issue #6).
