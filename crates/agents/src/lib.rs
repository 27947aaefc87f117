//! # agents — the OpenManus agents on openmanus-rs (being written, issue #7).

pub mod flow;
