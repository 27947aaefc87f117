//! # agent-config — being written (issue #7).
