//! # agents — being written (issue #7).
