//! # agent-sandbox — being written (issue #9).
