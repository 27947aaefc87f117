//! # agent-browser — being written (issue #8).
