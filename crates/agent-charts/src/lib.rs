//! # agent-charts — being written (issue #10).
